import { generateKeyPairSync, sign, verify } from "node:crypto"
import { compactVerify } from "jose"
import { describe, expect, it } from "vitest"
import { derToRaw, signEs256 } from "../../src/oidc/tokens/jws.js"

describe("ES256 compact JWS (src/oidc/tokens/jws.ts)", () => {
  it("DER signatures become the R || S form node:crypto produces with ieee-p1363, for many keys and inputs", () => {
    for (let i = 0; i < 300; i++) {
      const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" })
      const data = Buffer.from(`input ${i}`)
      const raw = derToRaw(sign("sha256", data, privateKey))
      expect(raw).toHaveLength(64)
      expect(verify("sha256", data, { key: publicKey, dsaEncoding: "ieee-p1363" }, raw)).toBe(true)
    }
  })

  it("jose verifies what signEs256 signs, header included", async () => {
    const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" })
    for (let i = 0; i < 50; i++) {
      const jwt = signEs256({ alg: "ES256", typ: "at+jwt", kid: "k1" }, { sub: `usr_${i}` }, privateKey)
      const { payload, protectedHeader } = await compactVerify(jwt, publicKey, { algorithms: ["ES256"] })
      expect(protectedHeader).toEqual({ alg: "ES256", typ: "at+jwt", kid: "k1" })
      expect(JSON.parse(new TextDecoder().decode(payload))).toEqual({ sub: `usr_${i}` })
    }
  })

  it("refuses what is not an ECDSA DER signature", () => {
    expect(() => derToRaw(Buffer.from([0x31, 0x00]))).toThrow()
    expect(() => derToRaw(Buffer.from([0x30, 0x06, 0x03, 0x01, 0x01, 0x02, 0x01, 0x01]))).toThrow()
  })
})
