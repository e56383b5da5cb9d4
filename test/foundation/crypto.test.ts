import { randomBytes } from "node:crypto"
import { Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import { base32 } from "../../src/platform/base32.js"
import { constantTimeEqual, makeCrypto } from "../../src/platform/crypto.js"
import { ID_PATTERN, Ids, IdsLive } from "../../src/platform/ids.js"
import { CryptoFromKeyring } from "../../src/platform/crypto.js"
import { Layer } from "effect"

const key = () => new Uint8Array(randomBytes(32))
const ctx = { purpose: "test", table: "things", rowId: "row_1" }

describe("secret box (AES-256-GCM under MASTER_KEY)", () => {
  it("round-trips a secret", async () => {
    const crypto = makeCrypto({ current: key() })
    const sealed = await Effect.runPromise(crypto.seal(ctx, "s3cret"))
    expect(sealed).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+\.[\w-]+$/)
    expect(sealed).not.toContain("s3cret")
    const opened = await Effect.runPromise(crypto.open(ctx, sealed))
    expect(opened.toString("utf8")).toBe("s3cret")
  })

  it("seals the same plaintext differently every time (random IV)", async () => {
    const crypto = makeCrypto({ current: key() })
    const [a, b] = await Effect.runPromise(Effect.all([crypto.seal(ctx, "x"), crypto.seal(ctx, "x")]))
    expect(a).not.toBe(b)
  })

  it("refuses to open under a wrong key", async () => {
    const sealed = await Effect.runPromise(makeCrypto({ current: key() }).seal(ctx, "s3cret"))
    const exit = await Effect.runPromiseExit(makeCrypto({ current: key() }).open(ctx, sealed))
    expect(Exit.isFailure(exit)).toBe(true)
    expect(JSON.stringify(exit)).toContain("unknown_key")
  })

  it("refuses a tampered ciphertext", async () => {
    const crypto = makeCrypto({ current: key() })
    const sealed = await Effect.runPromise(crypto.seal(ctx, "s3cret value"))
    const parts = sealed.split(".")
    const bytes = Buffer.from(parts[3]!, "base64url")
    bytes[0] = bytes[0]! ^ 1
    parts[3] = bytes.toString("base64url")
    const exit = await Effect.runPromiseExit(crypto.open(ctx, parts.join(".")))
    expect(JSON.stringify(exit)).toContain("authentication_failed")
  })

  it("binds the ciphertext to purpose, table and row (associated data)", async () => {
    const crypto = makeCrypto({ current: key() })
    const sealed = await Effect.runPromise(crypto.seal(ctx, "s3cret"))
    for (const other of [
      { ...ctx, rowId: "row_2" },
      { ...ctx, table: "others" },
      { ...ctx, purpose: "other" },
    ]) {
      const exit = await Effect.runPromiseExit(crypto.open(other, sealed))
      expect(JSON.stringify(exit)).toContain("authentication_failed")
    }
  })

  it("opens values sealed under the previous key during a rotation", async () => {
    const old = key()
    const sealed = await Effect.runPromise(makeCrypto({ current: old }).seal(ctx, "kept"))
    const rotated = makeCrypto({ current: key(), previous: old })
    expect((await Effect.runPromise(rotated.open(ctx, sealed))).toString()).toBe("kept")
  })

  it("refuses malformed input", async () => {
    const exit = await Effect.runPromiseExit(makeCrypto({ current: key() }).open(ctx, "not-sealed"))
    expect(JSON.stringify(exit)).toContain("malformed")
  })

  it("derives distinct HMAC keys per purpose and compares in constant time", () => {
    const crypto = makeCrypto({ current: key() })
    expect(crypto.hmac("a", "x").equals(crypto.hmac("b", "x"))).toBe(false)
    expect(crypto.hmac("a", "x").equals(crypto.hmac("a", "x"))).toBe(true)
    expect(constantTimeEqual("abc", "abc")).toBe(true)
    expect(constantTimeEqual("abc", "abd")).toBe(false)
    expect(constantTimeEqual("abc", "abcd")).toBe(false)
  })

  it("during a rotation, HMAC candidates are the sealing key's then the other key's (what cannot be re-keyed still verifies)", () => {
    const previous = key()
    const current = key()
    const rotating = makeCrypto({ current, previous })
    const underCurrent = makeCrypto({ current }).hmac("email-otp", "x")
    const underPrevious = makeCrypto({ current: previous }).hmac("email-otp", "x")
    expect(rotating.hmacCandidates("email-otp", "x")).toEqual([underPrevious, underCurrent])
    rotating.sealUnderMasterKey()
    expect(rotating.hmacCandidates("email-otp", "x")).toEqual([underCurrent, underPrevious])
    expect(makeCrypto({ current }).hmacCandidates("email-otp", "x")).toHaveLength(1)
  })
})

// docs/master-key-rotation.md, expand/contract: a process started with MASTER_KEY=<new> and
// MASTER_KEY_PREVIOUS=<old> writes only what a process holding the old key alone can read, until
// the database records the switch; then it writes under the new key, and still reads both.
describe("which key seals during a master-key rotation", () => {
  it("with both keys: seals and makes HMACs under MASTER_KEY_PREVIOUS (an old-key process reads them) until switched", async () => {
    const [old, fresh] = [key(), key()]
    const oldOnly = makeCrypto({ current: old })
    const both = makeCrypto({ current: fresh, previous: old })
    expect(both.sealingKeyId()).toBe(oldOnly.currentKeyId)
    expect(both.currentKeyId).toBe(makeCrypto({ current: fresh }).currentKeyId)
    const sealed = await Effect.runPromise(both.seal(ctx, "expand"))
    expect(both.sealedKeyId(sealed)).toBe(oldOnly.currentKeyId)
    expect((await Effect.runPromise(oldOnly.open(ctx, sealed))).toString()).toBe("expand")
    expect(both.hmac("email-otp", "x").equals(oldOnly.hmac("email-otp", "x"))).toBe(true)
  })

  it("switched: seals and makes HMACs under MASTER_KEY at once, still opens the old key's values; one way", async () => {
    const [old, fresh] = [key(), key()]
    const both = makeCrypto({ current: fresh, previous: old })
    const freshOnly = makeCrypto({ current: fresh })
    const before = await Effect.runPromise(both.seal(ctx, "before"))
    // Warm the derived-key caches of the old key: the switch must not leave them in use.
    both.hmac("social-state", "warm")
    expect(both.sealUnderMasterKey()).toBe(true)
    expect(both.sealingKeyId()).toBe(freshOnly.currentKeyId)
    const after = await Effect.runPromise(both.seal(ctx, "after"))
    expect(both.sealedKeyId(after)).toBe(freshOnly.currentKeyId)
    expect((await Effect.runPromise(freshOnly.open(ctx, after))).toString()).toBe("after")
    expect((await Effect.runPromise(both.open(ctx, before))).toString()).toBe("before")
    expect(both.hmac("social-state", "warm").equals(freshOnly.hmac("social-state", "warm"))).toBe(true)
    expect(both.sealUnderMasterKey()).toBe(false)
    expect(both.sealingKeyId()).toBe(freshOnly.currentKeyId)
  })

  it("one key: seals under it; switching is a no-op", () => {
    const only = makeCrypto({ current: key() })
    expect(only.sealingKeyId()).toBe(only.currentKeyId)
    expect(only.sealUnderMasterKey()).toBe(false)
  })
})

describe("ids", () => {
  it("are the prefix and 32 characters of [a-z2-7] from 20 random bytes", async () => {
    const ids = await Effect.runPromise(
      Effect.gen(function* () {
        const ids = yield* Ids
        return yield* Effect.all(Array.from({ length: 200 }, () => ids.make("usr")))
      }).pipe(Effect.provide(IdsLive.pipe(Layer.provide(CryptoFromKeyring({ current: key() }))))),
    )
    for (const id of ids) expect(id).toMatch(ID_PATTERN("usr"))
    expect(new Set(ids).size).toBe(200)
  })

  it("base32 encodes RFC 4648 test vectors in lower case without padding", () => {
    const enc = (s: string) => base32(new TextEncoder().encode(s))
    expect(enc("")).toBe("")
    expect(enc("f")).toBe("my")
    expect(enc("fo")).toBe("mzxq")
    expect(enc("foo")).toBe("mzxw6")
    expect(enc("foob")).toBe("mzxw6yq")
    expect(enc("fooba")).toBe("mzxw6ytb")
    expect(enc("foobar")).toBe("mzxw6ytboi")
    expect(base32(new Uint8Array(20)).length).toBe(32)
  })
})
