import { createHash } from "node:crypto"
import { constantTimeEqual } from "../../platform/crypto.js"

/** RFC 7636 4.1: code_verifier = 43 to 128 unreserved characters. */
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/

export const isWellFormedVerifier = (verifier: string) => VERIFIER.test(verifier)

/**
 * RFC 7636 4.6 with S256 only (spec: PKCE S256 for every client; `plain` unsupported):
 * BASE64URL(SHA256(ASCII(code_verifier))) must equal the stored code_challenge.
 */
export const pkceMatches = (verifier: string, challenge: string) =>
  constantTimeEqual(createHash("sha256").update(verifier, "ascii").digest("base64url"), challenge)
