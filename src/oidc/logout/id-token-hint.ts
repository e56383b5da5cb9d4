import { Effect, Option } from "effect"
import { compactVerify, decodeProtectedHeader } from "jose"
import { Keys } from "../../platform/keys/service.js"

export interface IdTokenHint {
  readonly sub: string
  readonly sid: string | undefined
  readonly aud: ReadonlyArray<string>
}

/**
 * Spec, Logout: `id_token_hint` is accepted when expired, but its signature and issuer are
 * still checked (ES256 fixed, a key of this Environment: Keys keeps retired keys 30 days for
 * this), and it must be an ID token (`typ` JWT, not an access token). Returns undefined
 * when the hint is not acceptable.
 */
export const verifyIdTokenHint = Effect.fnUntraced(function* (environmentId: string, issuer: string, hint: string) {
  const keys = yield* Keys
  let kid: string | undefined
  try {
    const header = decodeProtectedHeader(hint)
    if (header.alg !== "ES256" || header.typ !== "JWT" || typeof header.kid !== "string") return undefined
    kid = header.kid
  } catch {
    return undefined
  }
  const key = yield* keys.verificationKey(environmentId, kid)
  if (Option.isNone(key)) return undefined
  const verified = yield* Effect.tryPromise(() => compactVerify(hint, key.value, { algorithms: ["ES256"] })).pipe(
    Effect.option,
  )
  if (Option.isNone(verified)) return undefined
  let claims: Record<string, unknown>
  try {
    claims = JSON.parse(new TextDecoder().decode(verified.value.payload))
  } catch {
    return undefined
  }
  const aud =
    typeof claims["aud"] === "string"
      ? [claims["aud"]]
      : Array.isArray(claims["aud"])
        ? claims["aud"].filter((a) => typeof a === "string")
        : []
  if (claims["iss"] !== issuer || typeof claims["sub"] !== "string" || aud.length === 0) return undefined
  return {
    sub: claims["sub"],
    sid: typeof claims["sid"] === "string" ? claims["sid"] : undefined,
    aud,
  } satisfies IdTokenHint
})
