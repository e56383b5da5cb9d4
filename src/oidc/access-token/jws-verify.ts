import { type KeyObject, verify } from "node:crypto"
import { BoundedMap } from "../../platform/bounded-map.js"

/**
 * ES256 JWS Compact verification with node:crypto and the bare KeyObject (RFC 7515 5.2;
 * RFC 7518 3.4), plus a bounded cache of signatures already verified.
 *
 * Why not jose's jwtVerify on the hot path (docs/decisions/performance.md): it verifies through WebCrypto, an
 * async job on the libuv pool per token (6% of the CPU profile of the userinfo load, plus
 * 2% of jose's own parsing), measured at 2.4 k/s one at a time on this 2-core machine
 * against 5.8 k/s for node:crypto verify. And a resource server presents the
 * same access token many times within its 5 minutes: the signature of a given token
 * string under a given key never changes, so it is checked once per process. Everything
 * else (the key still being a key of the Environment, `typ`, `iss`, expiry against the
 * Effect Clock, the live checks) is checked on every call by the caller.
 */

export type JwsFailure = "malformed" | "signature" | "typ"

export interface VerifiedJws {
  readonly header: Record<string, unknown>
  readonly payload: Record<string, unknown>
}

/**
 * Tokens whose signature this process verified or made, with the key object that verifies them.
 * Each entry is about 1.3 KB (the token, its parsed header and payload): 20,000 is about 26 MB,
 * the tokens of the last 20 s at 1,000 grants per second.
 */
const CACHE_CAPACITY = 20_000
const verifiedSignatures = new BoundedMap<string, { readonly key: KeyObject; readonly verified: VerifiedJws }>(
  CACHE_CAPACITY,
)

/** R || S (32 bytes each) -> ECDSA-Sig-Value DER (RFC 3279 2.2.3), what the bare KeyObject form verifies. */
const rawToDer = (raw: Buffer): Buffer => {
  const integer = (half: Buffer) => {
    let start = 0
    while (start < half.length - 1 && half[start] === 0) start++
    const value = half.subarray(start)
    // A set high bit would read as negative: DER INTEGERs get a leading zero then.
    return value[0]! & 0x80
      ? Buffer.concat([Buffer.from([0x02, value.length + 1, 0]), value])
      : Buffer.concat([Buffer.from([0x02, value.length]), value])
  }
  const body = Buffer.concat([integer(raw.subarray(0, 32)), integer(raw.subarray(32))])
  return Buffer.concat([Buffer.from([0x30, body.length]), body])
}

const parseSegment = (segment: string): Record<string, unknown> | undefined => {
  try {
    const value: unknown = JSON.parse(Buffer.from(segment, "base64url").toString("utf8"))
    return value !== null && typeof value === "object" && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined
  } catch {
    return undefined
  }
}

const BASE64URL = /^[A-Za-z0-9_-]+$/

/** RFC 8725 3.11 / RFC 9068 4: `typ` compares case-insensitively, the `application/` prefix optional. */
const normalizeTyp = (typ: unknown) =>
  typeof typ === "string" ? typ.toLowerCase().replace(/^application\//, "") : undefined

/** The three parts of an ES256 compact JWS with its header and payload read, before any signature check. */
const parseCompact = (token: string) => {
  const parts = token.split(".")
  if (parts.length !== 3 || !parts.every((p) => BASE64URL.test(p))) return undefined
  const header = parseSegment(parts[0]!)
  const payload = parseSegment(parts[1]!)
  if (!header || !payload || header["alg"] !== "ES256" || "crit" in header) return undefined
  return { parts, verified: { header, payload } }
}

const remember = (token: string, key: KeyObject, verified: VerifiedJws) => {
  verifiedSignatures.store(token, { key, verified })
}

/**
 * Verifies an ES256 compact JWS with `typ` `expectedTyp` under `key`. The header's `alg` is
 * checked by the caller before the key is chosen; a `crit` header is refused (RFC 7515
 * 4.1.11: we understand no extension).
 */
export const verifyEs256 = (token: string, key: KeyObject, expectedTyp: string): VerifiedJws | JwsFailure => {
  const hit = verifiedSignatures.get(token)
  if (hit !== undefined && hit.key === key)
    return normalizeTyp(hit.verified.header["typ"]) === expectedTyp ? hit.verified : "typ"
  const compact = parseCompact(token)
  if (compact === undefined) return "malformed"
  const { parts, verified } = compact
  const signature = Buffer.from(parts[2]!, "base64url")
  if (signature.length !== 64) return "signature"
  if (!verify("sha256", Buffer.from(`${parts[0]}.${parts[1]}`), key, rawToDer(signature))) return "signature"
  remember(token, key, verified)
  return normalizeTyp(verified.header["typ"]) === expectedTyp ? verified : "typ"
}

/**
 * The header of a token whose signature this process verified or made (undefined otherwise):
 * the very object parsed from that token string, so a caller choosing the key by its `kid` need
 * not decode it again. Says nothing of validity: verifyEs256 still checks the token under the key.
 */
export const rememberedHeader = (token: string): Record<string, unknown> | undefined =>
  verifiedSignatures.get(token)?.verified.header

/**
 * A token this process has just signed with the private half of `publicKey` (the access token
 * of a grant) is authentic by construction: it is remembered as verified, so the client's first
 * UserInfo or introspection after a sign-in or a refresh, on this replica, makes no ECDSA
 * verification (about 0.15 ms of CPU each on this machine). Only the signer calls this, with the
 * very string it produced; every other check of verifyEs256's callers still runs on every call.
 */
export const rememberOwnSignature = (token: string, publicKey: KeyObject) => {
  const compact = parseCompact(token)
  if (compact !== undefined) remember(token, publicKey, compact.verified)
}
