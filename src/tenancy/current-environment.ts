import { Context } from "effect"
import type { EnvironmentRecord, EnvironmentUrls } from "./schema.js"

/** The Environment a request on the issuer host or an Interaction Domain addresses. */
export class CurrentEnvironment extends Context.Service<
  CurrentEnvironment,
  {
    readonly record: EnvironmentRecord
    readonly urls: EnvironmentUrls
    /** Which host the request arrived on: the Canonical Issuer host or the Interaction Domain. */
    readonly via: "issuer" | "interaction"
  }
>()("tenancy/CurrentEnvironment") {}
