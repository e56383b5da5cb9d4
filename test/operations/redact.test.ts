import { randomBytes } from "node:crypto"
import { describe, expect, it } from "vitest"
import { redactEveryPattern, redactText, redactValue } from "../../src/platform/observability/redact.js"

describe("the log redaction net", () => {
  it("masks emails, JWTs, refresh tokens, API keys, 256-bit secrets and 6-digit codes", () => {
    const secret = randomBytes(32)
      .toString("base64url")
      .replace(/^[^A-Z]/, "A")
    const text = `Key (email)=(Alice.Smith@example.com) already exists; token eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ1In0.c2ln rt_fam_abcdefghijklmnop.3.${secret} sk_live_${secret} secret=${secret} code 123456.`
    const out = redactText(text)
    expect(out).toBe(
      "Key (email)=(A***@e***.com) already exists; token [jwt] rt_[redacted] sk_live_[redacted] secret=[redacted] code [code].",
    )
  })

  it("leaves what operators need: ids, trace ids, timestamps, ports, durations", () => {
    const kept =
      "env_abcdefghijklmnopqrstuvwxyz234567 req_7rbl3ryhlmt2gxkgq6xq5xehlyk4lh4c trace 4bf92f3577b34da6a3ce929d0e0e4736 at 1764057600000 port 54321 took 123.456 ms job 1234567"
    expect(redactText(kept)).toBe(kept)
  })

  it("walks objects and arrays, leaving non-strings alone", () => {
    expect(
      redactValue({ to: "bob@example.org", n: 123456, nested: [{ code: "654321" }], ok: true, none: null }),
    ).toEqual({ to: "b***@e***.org", n: 123456, nested: [{ code: "[code]" }], ok: true, none: null })
  })

  it("skips the patterns only for texts none of them can match: the same output as running all five, for every text", () => {
    // Texts assembled from the pieces the patterns look for (and near misses), from a seeded
    // generator so a failure repeats: the first scan must never let through what a pattern masks.
    const pieces = [
      "@",
      "eyJ",
      "eyJhbGciOiJFUzI1NiJ9",
      ".",
      "-",
      "_",
      " ",
      "rt_",
      "sk_live_",
      "sk_test_",
      "dsh_",
      "rt",
      "sk",
      "12345",
      "123456",
      "6",
      "0",
      "example.com",
      "Alice",
      "bob",
      "A",
      "z",
      "x".repeat(39),
      "Q".repeat(20),
      "abc234567",
      "env_7rbl3ryhlmt2gxkgq6xq5xehlyk4lh4c",
      "(",
      ")",
      "é",
      "1.5",
      "\n",
    ]
    let seed = 42
    const next = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648
      return seed
    }
    let masked = 0
    for (let i = 0; i < 20_000; i++) {
      let text = ""
      const count = 1 + (next() % 12)
      for (let j = 0; j < count; j++) text += pieces[next() % pieces.length]
      const everyPattern = redactEveryPattern(text)
      expect(redactText(text), text).toBe(everyPattern)
      if (everyPattern !== text) masked++
    }
    // The generated texts hit the patterns often, so the comparison covers the masking path too.
    expect(masked).toBeGreaterThan(2_000)
  })
})
