import { createCipheriv, createDecipheriv, createSecretKey, hkdfSync, randomBytes } from "node:crypto"

/**
 * Cookie sealing: AES-256-GCM (authenticated encryption, so a cookie can be neither read nor
 * altered by the browser) under a key derived with HKDF-SHA256 (RFC 5869) from each
 * configured `cookieSecret`. The first secret seals; every secret opens, so secrets rotate
 * by putting the new one first and dropping the old one once its cookies have expired.
 *
 * Format: `v1.` + base64url(iv[12] || ciphertext || tag[16]). The purpose ("session",
 * "login") is the GCM associated data: a login-transaction cookie never opens as a session.
 * The payload carries its own expiry (`exp`, ms), checked on open, so a copied cookie does
 * not outlive its Max-Age.
 */
const VERSION = "v1."
const IV_BYTES = 12
const TAG_BYTES = 16
/** 32 characters: enough entropy for a random secret written as text (README shows how to make one). */
export const MIN_SECRET_LENGTH = 32

export interface Sealer {
  readonly seal: (purpose: string, payload: object, expiresAt: number) => string
  /** The payload, or undefined when the value is not ours, altered, sealed for another purpose or expired. */
  readonly open: (purpose: string, sealed: string, now: number) => Record<string, unknown> | undefined
}

/** A KeyObject, not a Buffer: node:crypto opens and seals several times faster with one (src/platform/crypto.ts). */
const deriveKey = (secret: string) =>
  createSecretKey(
    Buffer.from(hkdfSync("sha256", Buffer.from(secret, "utf8"), Buffer.alloc(0), "authservice/hono cookie v1", 32)),
  )

export const makeSealer = (secrets: ReadonlyArray<string>): Sealer => {
  if (secrets.length === 0) throw new TypeError("cookieSecret: give at least one secret")
  for (const s of secrets) {
    if (typeof s !== "string" || s.length < MIN_SECRET_LENGTH) {
      throw new TypeError(`cookieSecret: every secret must be a string of at least ${MIN_SECRET_LENGTH} characters`)
    }
  }
  const keys = secrets.map(deriveKey)
  return {
    seal: (purpose, payload, expiresAt) => {
      const iv = randomBytes(IV_BYTES)
      const cipher = createCipheriv("aes-256-gcm", keys[0]!, iv)
      cipher.setAAD(Buffer.from(purpose, "utf8"))
      const body = cipher.update(JSON.stringify({ ...payload, exp: expiresAt }), "utf8")
      const sealed = Buffer.concat([iv, body, cipher.final(), cipher.getAuthTag()])
      return VERSION + sealed.toString("base64url")
    },
    open: (purpose, sealed, now) => {
      if (!sealed.startsWith(VERSION)) return undefined
      const raw = Buffer.from(sealed.slice(VERSION.length), "base64url")
      if (raw.length < IV_BYTES + TAG_BYTES + 2) return undefined
      const iv = raw.subarray(0, IV_BYTES)
      const tag = raw.subarray(raw.length - TAG_BYTES)
      const body = raw.subarray(IV_BYTES, raw.length - TAG_BYTES)
      for (const key of keys) {
        try {
          const decipher = createDecipheriv("aes-256-gcm", key, iv)
          decipher.setAAD(Buffer.from(purpose, "utf8"))
          decipher.setAuthTag(tag)
          const json = Buffer.concat([decipher.update(body), decipher.final()]).toString("utf8")
          const payload = JSON.parse(json) as Record<string, unknown>
          if (typeof payload["exp"] !== "number" || payload["exp"] <= now) return undefined
          return payload
        } catch {
          // not this key (or not ours at all): try the next one
        }
      }
      return undefined
    },
  }
}
