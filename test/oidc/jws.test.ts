import { generateKeyPairSync, sign, verify } from "node:crypto"
import { compactVerify, SignJWT } from "jose"
import { rememberOwnSignature, verifyEs256 } from "../../src/oidc/access-token/jws-verify.js"
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

describe("ES256 compact JWS verification (src/oidc/access-token/jws-verify.ts)", () => {
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url")

  it("verifies what jose signs (R || S with high bits and leading zeros: many keys), and what signEs256 signs", async () => {
    for (let i = 0; i < 200; i++) {
      const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" })
      const jwt = await new SignJWT({ sub: `usr_${i}` })
        .setProtectedHeader({ alg: "ES256", typ: "at+jwt", kid: "k" })
        .sign(privateKey)
      expect(verifyEs256(jwt, publicKey, "at+jwt")).toEqual({
        header: { alg: "ES256", typ: "at+jwt", kid: "k" },
        payload: { sub: `usr_${i}` },
      })
      const ours = signEs256({ alg: "ES256", typ: "at+jwt", kid: "k" }, { sub: `usr_${i}` }, privateKey)
      expect(verifyEs256(ours, publicKey, "at+jwt")).not.toBeTypeOf("string")
    }
  })

  it("refuses a changed payload, header or signature, another key, another typ, alg none and crit", () => {
    const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" })
    const other = generateKeyPairSync("ec", { namedCurve: "P-256" }).publicKey
    const jwt = signEs256({ alg: "ES256", typ: "at+jwt", kid: "k" }, { sub: "usr_a" }, privateKey)
    const [h, p, s] = jwt.split(".") as [string, string, string]
    // Verified (and remembered) under the right key first: the memory must not vouch for another key.
    expect(verifyEs256(jwt, publicKey, "at+jwt")).not.toBeTypeOf("string")
    expect(verifyEs256(jwt, other, "at+jwt")).toBe("signature")
    expect(verifyEs256(`${h}.${b64({ sub: "usr_b" })}.${s}`, publicKey, "at+jwt")).toBe("signature")
    expect(verifyEs256(`${b64({ alg: "ES256", typ: "at+jwt", kid: "k2" })}.${p}.${s}`, publicKey, "at+jwt")).toBe(
      "signature",
    )
    const flipped = Buffer.from(s, "base64url")
    flipped[10] = flipped[10]! ^ 1
    expect(verifyEs256(`${h}.${p}.${flipped.toString("base64url")}`, publicKey, "at+jwt")).toBe("signature")
    expect(verifyEs256(`${h}.${p}`, publicKey, "at+jwt")).toBe("malformed")
    expect(verifyEs256(`${b64({ alg: "none", typ: "at+jwt" })}.${p}.`, publicKey, "at+jwt")).toBe("malformed")
    const idToken = signEs256({ alg: "ES256", typ: "JWT", kid: "k" }, { sub: "usr_a" }, privateKey)
    expect(verifyEs256(idToken, publicKey, "at+jwt")).toBe("typ")
    expect(verifyEs256(idToken, publicKey, "at+jwt")).toBe("typ") // remembered: still the wrong typ
    const critical = `${b64({ alg: "ES256", typ: "at+jwt", kid: "k", crit: ["exp"] })}.${p}`
    const signed = `${critical}.${derToRaw(sign("sha256", Buffer.from(critical), privateKey)).toString("base64url")}`
    expect(verifyEs256(signed, publicKey, "at+jwt")).toBe("malformed")
    // typ compares as RFC 8725 says: case-insensitive, application/ prefix optional.
    expect(
      verifyEs256(
        signEs256({ alg: "ES256", typ: "application/AT+JWT" as never, kid: "k" }, { sub: "x" }, privateKey),
        publicKey,
        "at+jwt",
      ),
    ).not.toBeTypeOf("string")
  })
})

describe("signatures this process made (rememberOwnSignature)", () => {
  it("a token remembered under its signer's public key needs no verification there, and only there", () => {
    const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" })
    const other = generateKeyPairSync("ec", { namedCurve: "P-256" }).publicKey
    const jwt = signEs256({ alg: "ES256", typ: "at+jwt", kid: "own" }, { sub: "usr_own" }, privateKey)
    // The signature part replaced: only a remembered token can pass verifyEs256 like this,
    // which is what shows that the remembered one was not verified again.
    const [h, p] = jwt.split(".") as [string, string]
    const unverifiable = `${h}.${p}.${Buffer.alloc(64, 1).toString("base64url")}`
    expect(verifyEs256(unverifiable, publicKey, "at+jwt")).toBe("signature")
    rememberOwnSignature(unverifiable, publicKey)
    const remembered = verifyEs256(unverifiable, publicKey, "at+jwt")
    expect(remembered).toEqual({ header: { alg: "ES256", typ: "at+jwt", kid: "own" }, payload: { sub: "usr_own" } })
    expect(verifyEs256(unverifiable, other, "at+jwt")).toBe("signature")
    expect(verifyEs256(unverifiable, publicKey, "JWT")).toBe("typ")
    // What is not a compact ES256 JWS is not remembered.
    const none = `${Buffer.from(JSON.stringify({ alg: "none" })).toString("base64url")}.${p}.`
    rememberOwnSignature(none, publicKey)
    expect(verifyEs256(none, publicKey, "at+jwt")).toBe("malformed")
  })
})
