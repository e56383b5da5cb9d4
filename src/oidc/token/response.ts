import { HttpServerResponse } from "effect/http"
import { ACCESS_TOKEN_TTL_S } from "../tokens/mint.js"

/** Spec, Token: success body. */
export interface TokenResponseBody {
  readonly access_token: string
  readonly token_type: "Bearer"
  readonly expires_in: number
  readonly scope: string
  readonly id_token?: string
  readonly refresh_token?: string
}

export const tokenResponseBody = (input: {
  readonly accessToken: string
  readonly scopes: ReadonlyArray<string>
  readonly idToken: string | undefined
  readonly refreshToken: string | undefined
}): TokenResponseBody => ({
  access_token: input.accessToken,
  token_type: "Bearer",
  expires_in: ACCESS_TOKEN_TTL_S,
  scope: input.scopes.join(" "),
  ...(input.idToken !== undefined ? { id_token: input.idToken } : {}),
  ...(input.refreshToken !== undefined ? { refresh_token: input.refreshToken } : {}),
})

/** RFC 6749 5.1: token responses are never cached. */
export const NO_STORE = { "cache-control": "no-store", pragma: "no-cache" } as const

/** The body is sent as serialized text so a replayed (sealed) response is byte-identical. */
export const tokenResponse = (bodyText: string) =>
  HttpServerResponse.text(bodyText, { contentType: "application/json", headers: NO_STORE })
