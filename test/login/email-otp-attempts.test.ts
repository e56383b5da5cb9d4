import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import {
  createClient,
  emailOtpCalls,
  type LoginClientInfo,
  query,
  type SmtpSink,
  startSmtpSink,
  transactionStatus,
  wrongCodeFor,
} from "./support.js"

// The Email OTP attempt rule (src/login/email-otp/attempts.ts; spec, Limits: "max 5 wrong
// verifies (the 5th invalidates)"): every wrong code counts and commits, the 5th invalidates the
// challenge, concurrency cannot buy a 6th, a resend buys no guesses, a malformed code is not an
// attempt. The all-addresses failure ceiling: test/login/email-otp-code-changes.test.ts.

let app: TestApp
let b: Bootstrapped
let client: LoginClientInfo
let smtp: SmtpSink

beforeAll(async () => {
  smtp = await startSmtpSink()
  app = await startApp({ worker: true, env: { SMTP_URL: smtp.url } })
  b = await app.bootstrap()
  client = await createClient(app, b)
})
afterAll(async () => {
  await app?.close()
  await smtp?.close()
})

const { resend, verify, started, events } = emailOtpCalls(() => ({ app, b, client, smtp }))

describe("Email OTP attempts", () => {
  it("a wrong code: 400 invalid_code; the attempt is counted and committed; login.failed invalid_code", async () => {
    const since = app.now()
    const s = await started()
    const res = await verify(s.txn, s.challenge, wrongCodeFor(s.code))
    expect([res.status, res.json.code]).toEqual([400, "invalid_code"])
    const rows = await query<{ failed_attempts: number; status: string }>(
      app,
      "select failed_attempts, status from email_challenges where id = $1",
      [s.challenge],
    )
    expect(rows[0]).toEqual({ failed_attempts: 1, status: "active" })
    const failed = (await events("login.failed", since)).map((e) => e.envelope.payload)
    expect(failed).toContainEqual(
      expect.objectContaining({ method: "email_otp", reason: "invalid_code", clientId: client.client_id }),
    )
    expect(JSON.stringify(failed)).not.toContain(s.email)
    expect(await transactionStatus(app, s.txn)).toBe("challenge_issued")
    expect((await verify(s.txn, s.challenge, s.code)).status).toBe(200)
  })

  it("the 5th wrong attempt invalidates the challenge: even the right code then fails", async () => {
    const s = await started()
    for (let i = 1; i <= 5; i++) {
      const res = await verify(s.txn, s.challenge, wrongCodeFor(s.code))
      expect([res.status, res.json.code]).toEqual([400, "invalid_code"])
    }
    const rows = await query<{ failed_attempts: number; status: string }>(
      app,
      "select failed_attempts, status from email_challenges where id = $1",
      [s.challenge],
    )
    expect(rows[0]).toEqual({ failed_attempts: 5, status: "invalidated" })
    const res = await verify(s.txn, s.challenge, s.code)
    expect([res.status, res.json.code]).toEqual([400, "invalid_code"])
    expect(await transactionStatus(app, s.txn)).toBe("challenge_issued")
    // resend cannot revive it; a new start can
    const r = await resend(s.txn, s.challenge)
    expect([r.status, r.json.code]).toEqual([400, "invalid_request"])
  })

  it("race: 10 concurrent wrong verifies -> exactly 5 failures counted, then the challenge is dead", async () => {
    const s = await started()
    const results = await Promise.all(
      Array.from({ length: 10 }, () => verify(s.txn, s.challenge, wrongCodeFor(s.code))),
    )
    expect(results.map((r) => [r.status, r.json.code])).toEqual(Array.from({ length: 10 }, () => [400, "invalid_code"]))
    const rows = await query<{ failed_attempts: number; status: string }>(
      app,
      "select failed_attempts, status from email_challenges where id = $1",
      [s.challenge],
    )
    expect(rows[0]).toEqual({ failed_attempts: 5, status: "invalidated" })
    expect((await verify(s.txn, s.challenge, s.code)).json.code).toBe("invalid_code")
  })

  it("refuses a code that is not 6 digits (400 invalid_request) without counting it", async () => {
    const s = await started()
    for (const code of ["12345", "1234567", "abcdef", ""]) {
      const res = await verify(s.txn, s.challenge, code)
      expect([res.status, res.json.code]).toEqual([400, "invalid_request"])
    }
    const rows = await query<{ failed_attempts: number }>(
      app,
      "select failed_attempts from email_challenges where id = $1",
      [s.challenge],
    )
    expect(rows[0]!.failed_attempts).toBe(0)
  })

  it("wrong attempts carry over a resend: 4 wrong, resend, 1 wrong -> invalidated", async () => {
    const s = await started()
    for (let i = 0; i < 4; i++) expect((await verify(s.txn, s.challenge, wrongCodeFor(s.code))).status).toBe(400)
    await app.advance("30 seconds")
    expect((await resend(s.txn, s.challenge)).status).toBe(202)
    const newCode = await smtp.waitForCode(s.email, 2)
    expect((await verify(s.txn, s.challenge, wrongCodeFor(newCode))).status).toBe(400)
    const rows = await query<{ failed_attempts: number; status: string }>(
      app,
      "select failed_attempts, status from email_challenges where id = $1",
      [s.challenge],
    )
    expect(rows[0]).toEqual({ failed_attempts: 5, status: "invalidated" })
    expect((await verify(s.txn, s.challenge, newCode)).json.code).toBe("invalid_code")
  })
})
