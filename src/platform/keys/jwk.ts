import { createPublicKey, generateKeyPairSync, type KeyObject } from "node:crypto"
import { calculateJwkThumbprint, type JWK } from "jose"

export interface PublicSigningJwk {
  readonly kty: "EC"
  readonly crv: "P-256"
  readonly x: string
  readonly y: string
  readonly kid: string
  readonly alg: "ES256"
  readonly use: "sig"
}

export const generateP256 = (): KeyObject => generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey

/** The public half as a JWK; `kid` is its RFC 7638 thumbprint. The private `d` never leaves. */
export const publicJwkOf = async (privateKey: KeyObject): Promise<PublicSigningJwk> => {
  const { kty, crv, x, y } = createPublicKey(privateKey).export({ format: "jwk" }) as JWK
  const base = { kty: kty as "EC", crv: crv as "P-256", x: x!, y: y! }
  return { ...base, kid: await calculateJwkThumbprint(base), alg: "ES256", use: "sig" }
}
