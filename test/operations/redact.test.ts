import { randomBytes } from "node:crypto"
import { describe, expect, it } from "vitest"
import { redactText, redactValue } from "../../src/platform/observability/redact.js"

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
})
