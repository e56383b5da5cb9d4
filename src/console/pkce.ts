import { createHash } from "node:crypto"
import { Effect } from "effect"
import { Crypto } from "../platform/crypto.js"

/**
 * The secrets of one console sign-in, derived from its `state` (a 256-bit random value kept in
 * an HttpOnly cookie of the browser that started it): the PKCE verifier and the nonce are HMACs of
 * the state under the master key, so the server stores nothing per sign-in and only the browser
 * holding the cookie can finish it (docs/decisions/admin-console.md, "Sign-in").
 */
export const signInSecrets = (state: string) =>
  Effect.gen(function* () {
    const crypto = yield* Crypto
    const verifier = crypto.hmac("console-pkce-verifier", state).toString("base64url")
    const nonce = crypto.hmac("console-nonce", state).toString("base64url")
    const challenge = createHash("sha256").update(verifier).digest("base64url")
    return { verifier, nonce, challenge }
  })

export const newState = Effect.gen(function* () {
  const crypto = yield* Crypto
  return yield* crypto.randomToken(32)
})
