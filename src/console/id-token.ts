import { Clock, Effect, Schema } from "effect"
import { createRemoteJWKSet, jwtVerify } from "jose"

export class SignInFailed extends Schema.TaggedError<SignInFailed>()("SignInFailed", {
  /** A short code the console shows (`/console/?signin_error=<code>`). */
  code: Schema.String,
  detail: Schema.String,
}) {}

const keySets = new Map<string, ReturnType<typeof createRemoteJWKSet>>()
const keySetOf = (issuer: string) => {
  let set = keySets.get(issuer)
  if (set === undefined) {
    set = createRemoteJWKSet(new URL(`${issuer}/oauth2/jwks`))
    keySets.set(issuer, set)
  }
  return set
}

export interface SignedInUser {
  readonly sub: string
  readonly email: string
  readonly sid: string | undefined
}

/**
 * Exchanges the authorization code at the platform Environment's token endpoint (a public
 * client: PKCE, no secret) and validates the ID token as OpenID Connect Core 3.1.3.7 asks: the
 * issuer's key, `iss`, `aud`, expiry (at the application Clock's time) and the sign-in's nonce.
 */
export const exchangeCode = (input: {
  readonly issuer: string
  readonly clientId: string
  readonly redirectUri: string
  readonly code: string
  readonly verifier: string
  readonly nonce: string
}) =>
  Effect.gen(function* () {
    const response = yield* Effect.tryPromise({
      try: () =>
        fetch(`${input.issuer}/oauth2/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
          body: new URLSearchParams({
            grant_type: "authorization_code",
            code: input.code,
            redirect_uri: input.redirectUri,
            client_id: input.clientId,
            code_verifier: input.verifier,
          }),
          signal: AbortSignal.timeout(10_000),
        }).then(async (r) => ({
          status: r.status,
          body: (await r.json().catch(() => undefined)) as Record<string, unknown> | undefined,
        })),
      catch: () =>
        new SignInFailed({
          code: "issuer_unreachable",
          detail: "The platform Environment's token endpoint did not answer",
        }),
    })
    if (response.status !== 200 || typeof response.body?.["id_token"] !== "string") {
      const error = typeof response.body?.["error"] === "string" ? response.body["error"] : `status ${response.status}`
      return yield* new SignInFailed({
        code: "code_exchange_failed",
        detail: `The token endpoint refused the code (${error})`,
      })
    }
    const now = yield* Clock.currentTimeMillis
    const verified = yield* Effect.tryPromise({
      try: () =>
        jwtVerify(response.body!["id_token"] as string, keySetOf(input.issuer), {
          issuer: input.issuer,
          audience: input.clientId,
          currentDate: new Date(now),
          algorithms: ["ES256"],
        }),
      catch: () => new SignInFailed({ code: "invalid_id_token", detail: "The ID token did not verify" }),
    })
    const claims = verified.payload
    if (claims["nonce"] !== input.nonce)
      return yield* new SignInFailed({ code: "invalid_id_token", detail: "The ID token's nonce is not this sign-in's" })
    if (typeof claims.sub !== "string" || typeof claims["email"] !== "string" || claims["email_verified"] !== true) {
      return yield* new SignInFailed({
        code: "email_not_verified",
        detail: "The ID token carries no verified email address",
      })
    }
    return {
      sub: claims.sub,
      email: claims["email"].toLowerCase(),
      sid: typeof claims["sid"] === "string" ? claims["sid"] : undefined,
    } satisfies SignedInUser
  })
