import { Context } from "effect"
import type { Actor } from "../../platform/request-context.js"

/** The authenticated caller of a Management route: an API key or a Dashboard session. */
export interface Caller {
  readonly kind: "api_key" | "dashboard"
  /** The Workspace every request of this caller is confined to. */
  readonly workspaceId: string
  /** Set for Environment-pinned API keys. */
  readonly environmentId: string | null
  readonly scopes: ReadonlySet<string>
  readonly actor: Actor
  /** Dashboard sessions only. */
  readonly role?: "owner" | "admin" | "member" | undefined
  readonly platformUserId?: string | undefined
}

export class CurrentCaller extends Context.Service<CurrentCaller, Caller>()("management/CurrentCaller") {}
