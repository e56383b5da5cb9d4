import { Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { Config } from "../../platform/config.js"
import { sha256Hex } from "../../platform/crypto.js"

/**
 * The Hosted Login browser binding (docs/architecture.md: transactions started by /oauth2/authorize are
 * bound to an HttpOnly, Secure (except on localhost), SameSite=Lax cookie on the
 * Interaction Domain). The cookie holds a 256-bit secret; the transaction keeps its SHA-256.
 * With https the `__Host-` prefix pins it to the exact host, path `/`, Secure.
 */
export const bindingCookieName = (scheme: "http" | "https") =>
  scheme === "https" ? "__Host-authservice_login" : "authservice_login"

/** The cookie lives as long as a transaction may (spec: 10 minutes). */
export const BINDING_COOKIE_MAX_AGE_SECONDS = 600

/** SHA-256 of the binding secret the request's cookie carries, if any. */
export const requestBindingHash = Effect.gen(function* () {
  const config = yield* Config
  const request = yield* HttpServerRequest.HttpServerRequest
  const secret = request.cookies[bindingCookieName(config.publicScheme)]
  return secret === undefined || secret === "" ? undefined : sha256Hex(secret)
})

export const setBindingCookie = (
  response: HttpServerResponse.HttpServerResponse,
  scheme: "http" | "https",
  secret: string,
) =>
  HttpServerResponse.setCookieUnsafe(response, bindingCookieName(scheme), secret, {
    httpOnly: true,
    sameSite: "lax",
    secure: scheme === "https",
    path: "/",
    maxAge: `${BINDING_COOKIE_MAX_AGE_SECONDS} seconds`,
  })
