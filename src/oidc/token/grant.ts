import type { PresentedClient } from "./client-auth.js"
import type { OAuthParams } from "./params.js"

/**
 * What every grant handler receives once the request is parsed. Each grant authenticates
 * the presented client (checkClient) with the client row it reads together with its own
 * state, in one database round trip.
 */
export interface GrantContext {
  readonly params: OAuthParams
  readonly presented: PresentedClient
  readonly environmentId: string
  readonly issuer: string
}
