import type { OAuthClientRow } from "./client-repo.js"
import type { OAuthParams } from "./params.js"

/** What every grant handler receives once the request is parsed and the client authenticated. */
export interface GrantContext {
  readonly params: OAuthParams
  readonly client: OAuthClientRow
  readonly environmentId: string
  readonly issuer: string
}
