import type { AccessTokenClaims } from "../access-token/verify.js"

/**
 * An active introspection response (spec: Introspect; RFC 7662 2.2): the token's own claims,
 * `aud` exactly as the token carries it. One function for the application's answer and the
 * listener's (from-memory.ts), so they cannot differ.
 */
export const activeIntrospection = (c: AccessTokenClaims, rawAud: string | ReadonlyArray<string>) => ({
  active: true,
  scope: c.scope,
  client_id: c.client_id,
  token_type: "Bearer",
  exp: c.exp,
  iat: c.iat,
  sub: c.sub,
  aud: rawAud,
  iss: c.iss,
  jti: c.jti,
  sid: c.sid,
  auth_time: c.auth_time,
  amr: c.amr,
  acr: c.acr,
})
