import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Tenancy } from "../../src/tenancy/service.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import {
  countRows,
  createClient,
  createTransaction,
  emailOtpCalls,
  type LoginClientInfo,
  publicApi,
  query,
  type SmtpSink,
  startSmtpSink,
  transactionStatus,
  uniqueEmail,
} from "./support.js"

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

const { start, resend, verify, started, events } = emailOtpCalls(() => ({ app, b, client, smtp }))
const complete = (txn: string) => publicApi(app, b, `/auth/transactions/${txn}/complete`, { method: "POST" })

it("no development mailbox when SMTP_URL is set", async () => {
  const res = await app.request(b.interaction_domain, "/login/dev-mailbox")
  expect([res.status, res.json.code]).toEqual([404, "not_found"])
})

describe("start", () => {
  it("202 {challenge_id, expires_at}: 5 minutes; the transaction is challenge_issued; the code arrives by SMTP", async () => {
    const txn = await createTransaction(app, b, client)
    const email = uniqueEmail()
    const now = app.now()
    const res = await start(txn, email)
    expect(res.status).toBe(202)
    expect(Object.keys(res.json).sort()).toEqual(["challenge_id", "expires_at"])
    expect(res.json.challenge_id).toMatch(/^chl_[a-z2-7]{32}$/)
    expect(Date.parse(res.json.expires_at)).toBe(now + 300_000)
    expect(await transactionStatus(app, txn)).toBe("challenge_issued")
    const code = await smtp.waitForCode(email)
    expect(code).toMatch(/^\d{6}$/)
    // Only an HMAC of the code is stored.
    const rows = await query<{ code_hmac: string }>(app, "select code_hmac from email_challenges where id = $1", [
      res.json.challenge_id,
    ])
    expect(rows[0]!.code_hmac).toMatch(/^[0-9a-f]{64}$/)
    expect(JSON.stringify(rows)).not.toContain(code)
  })

  it("refuses a malformed address (400 invalid_request) without sending or moving the transaction", async () => {
    const txn = await createTransaction(app, b, client)
    for (const email of ["not-an-email", "a b@example.com", `${"a".repeat(250)}@example.com`]) {
      const res = await start(txn, email)
      expect([res.status, res.json.code]).toEqual([400, "invalid_request"])
    }
    const res = await publicApi(app, b, `/auth/transactions/${txn}/email/start`, { body: {} })
    expect([res.status, res.json.code]).toEqual([400, "invalid_request_body"])
    expect(await transactionStatus(app, txn)).toBe("created")
    expect(await countRows(app, "email_challenges", "transaction_id = $1", [txn])).toBe(0)
  })

  it("404 auth_transaction_not_found for an unknown transaction", async () => {
    const res = await start("txn_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", uniqueEmail())
    expect([res.status, res.json.code]).toEqual([404, "auth_transaction_not_found"])
  })

  it("one active code per Environment + email: a second start supersedes the first challenge", async () => {
    const first = await started()
    const second = await started(first.email)
    const res = await verify(first.txn, first.challenge, first.code)
    expect([res.status, res.json.code]).toEqual([400, "invalid_code"])
    const ok = await verify(second.txn, second.challenge, second.code)
    expect(ok.status).toBe(200)
    const active = await countRows(
      app,
      "email_challenges",
      "environment_id = $1 and email_normalized = $2 and status = 'active'",
      [b.environment_id, first.email],
    )
    expect(active).toBe(0)
  })

  it("restarting on the same transaction with another address supersedes its earlier challenge", async () => {
    const first = await started()
    const other = uniqueEmail()
    const res = await start(first.txn, other)
    expect(res.status).toBe(202)
    const otherCode = await smtp.waitForCode(other)
    expect((await verify(first.txn, first.challenge, first.code)).json.code).toBe("invalid_code")
    expect((await verify(first.txn, res.json.challenge_id, otherCode)).status).toBe(200)
  })
})

// Wrong codes and the attempt limit: email-otp-attempts.test.ts.
describe("verify", () => {
  it("200 {transaction_id, status: authenticated}; creates the user on first login with a verified email", async () => {
    const since = app.now()
    const s = await started()
    const res = await verify(s.txn, s.challenge, s.code)
    expect(res.status).toBe(200)
    expect(res.json).toEqual({ transaction_id: s.txn, status: "authenticated" })
    expect(res.headers["cache-control"]).toBe("no-store")
    const users = await query<{ id: string; email_verified: boolean; status: string }>(
      app,
      "select id, email_verified, status from users where environment_id = $1 and email_normalized = $2",
      [b.environment_id, s.email],
    )
    expect(users).toHaveLength(1)
    expect(users[0]!.email_verified).toBe(true)
    const created = (await events("user.created", since)).filter((e) => e.envelope.payload["userId"] === users[0]!.id)
    expect(created).toHaveLength(1)
    expect(created[0]!.envelope.payload["method"]).toBe("email_otp")
    const view = await publicApi(app, b, `/auth/transactions/${s.txn}`)
    expect(view.json).toMatchObject({ status: "authenticated", method: "email_otp" })
    // no tokens from verify (spec: "no access or refresh token is returned by verify")
    expect(Object.keys(res.json)).not.toContain("access_token")
    // the same code cannot be used twice
    const again = await verify(s.txn, s.challenge, s.code)
    expect([again.status, again.json.code]).toEqual([409, "invalid_transaction_state"])
  })

  it("an existing user logs in without a second user; an unverified email becomes verified (user.updated)", async () => {
    const email = uniqueEmail("existing")
    const created = await app.management(`/v1/users?environment_id=${b.environment_id}`, {
      method: "POST",
      body: { environment_id: b.environment_id, email },
    })
    expect(created.status, created.text).toBe(201)
    const since = app.now()
    const s = await started(email)
    expect((await verify(s.txn, s.challenge, s.code)).status).toBe(200)
    expect(
      await countRows(app, "users", "environment_id = $1 and email_normalized = $2", [b.environment_id, email]),
    ).toBe(1)
    const row = await query<{ email_verified: boolean }>(app, "select email_verified from users where id = $1", [
      created.json.id,
    ])
    expect(row[0]!.email_verified).toBe(true)
    const updated = (await events("user.updated", since)).filter(
      (e) => e.envelope.payload["userId"] === created.json.id,
    )
    expect(updated.map((e) => e.envelope.payload["changedFields"])).toEqual([["email_verified"]])
  })

  it("an unknown challenge_id: 400 invalid_code", async () => {
    const s = await started()
    const res = await verify(s.txn, "chl_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", s.code)
    expect([res.status, res.json.code]).toEqual([400, "invalid_code"])
    // another transaction's challenge is unknown here too
    const t = await started()
    const res2 = await verify(s.txn, t.challenge, t.code)
    expect([res2.status, res2.json.code]).toEqual([400, "invalid_code"])
  })

  it("5-minute lifetime: the code works at 4:59; at 5:00 it is 400 invalid_code with login.failed expired_code", async () => {
    const a = await started()
    await app.advance("299 seconds")
    expect((await verify(a.txn, a.challenge, a.code)).status).toBe(200)
    const since = app.now()
    const s = await started()
    await app.advance("300 seconds")
    const res = await verify(s.txn, s.challenge, s.code)
    expect([res.status, res.json.code]).toEqual([400, "invalid_code"])
    const failed = (await events("login.failed", since)).map((e) => e.envelope.payload)
    expect(failed).toContainEqual(expect.objectContaining({ method: "email_otp", reason: "expired_code" }))
    expect(await transactionStatus(app, s.txn)).toBe("challenge_issued")
  })

  it("new_user_creation_blocked: 403 for a new address, nothing created; existing users still log in", async () => {
    const existing = await started()
    expect((await verify(existing.txn, existing.challenge, existing.code)).status).toBe(200)
    await query(app, "update environments set new_user_creation_blocked = true where id = $1", [b.environment_id])
    await app.run(Tenancy.use((t) => Effect.sync(() => t.forgetEnvironment(b.environment_id))))
    try {
      const s = await started()
      const res = await verify(s.txn, s.challenge, s.code)
      expect([res.status, res.json.code]).toEqual([403, "new_user_creation_blocked"])
      expect(
        await countRows(app, "users", "environment_id = $1 and email_normalized = $2", [b.environment_id, s.email]),
      ).toBe(0)
      expect(await transactionStatus(app, s.txn)).toBe("challenge_issued")
      const again = await started(existing.email)
      expect((await verify(again.txn, again.challenge, again.code)).status).toBe(200)
    } finally {
      await query(app, "update environments set new_user_creation_blocked = false where id = $1", [b.environment_id])
      await app.run(Tenancy.use((t) => Effect.sync(() => t.forgetEnvironment(b.environment_id))))
    }
  })

  it("a blocked user: 403 access_denied, login.failed user_blocked; the transaction stays unauthenticated", async () => {
    const email = uniqueEmail("blocked")
    const created = await app.management(`/v1/users?environment_id=${b.environment_id}`, {
      method: "POST",
      body: { environment_id: b.environment_id, email },
    })
    expect(created.status).toBe(201)
    await query(app, "update users set status = 'blocked' where id = $1", [created.json.id])
    const since = app.now()
    const s = await started(email)
    const res = await verify(s.txn, s.challenge, s.code)
    expect([res.status, res.json.code]).toEqual([403, "access_denied"])
    const failed = (await events("login.failed", since)).map((e) => e.envelope.payload)
    expect(failed).toContainEqual(
      expect.objectContaining({ userId: created.json.id, reason: "user_blocked", method: "email_otp" }),
    )
    expect(await transactionStatus(app, s.txn)).toBe("challenge_issued")
    expect((await verify(s.txn, s.challenge, s.code)).json.code).toBe("invalid_code")
  })
})

describe("resend", () => {
  it("< 30 s: 429 resend_too_soon with Retry-After; at 30 s: 202, generation + 1, the old code is invalid", async () => {
    const s = await started()
    const early = await resend(s.txn, s.challenge)
    expect([early.status, early.json.code]).toEqual([429, "resend_too_soon"])
    expect(early.headers["retry-after"]).toBe("30")
    await app.advance("29 seconds")
    const stillEarly = await resend(s.txn, s.challenge)
    expect([stillEarly.status, stillEarly.headers["retry-after"]]).toEqual([429, "1"])
    await app.advance("1 second")
    const now = app.now()
    const res = await resend(s.txn, s.challenge)
    expect(res.status).toBe(202)
    expect(res.json).toEqual({ challenge_id: s.challenge, expires_at: new Date(now + 300_000).toISOString() })
    const newCode = await smtp.waitForCode(s.email, 2)
    const rows = await query<{ generation: number }>(app, "select generation from email_challenges where id = $1", [
      s.challenge,
    ])
    expect(rows[0]!.generation).toBe(2)
    if (newCode !== s.code) {
      expect((await verify(s.txn, s.challenge, s.code)).json.code).toBe("invalid_code")
    }
    expect((await verify(s.txn, s.challenge, newCode)).status).toBe(200)
  })

  it("concurrent resends: one new code", async () => {
    const s = await started()
    await app.advance("30 seconds")
    // 4 resends + the start stay within the 5 mails per address per 10 minutes
    const results = await Promise.all(Array.from({ length: 4 }, () => resend(s.txn, s.challenge)))
    expect(results.filter((r) => r.status === 202)).toHaveLength(1)
    expect(results.filter((r) => r.status === 429 && r.json.code === "resend_too_soon")).toHaveLength(3)
    const rows = await query<{ generation: number }>(app, "select generation from email_challenges where id = $1", [
      s.challenge,
    ])
    expect(rows[0]!.generation).toBe(2)
  })

  it("refuses an unknown challenge (400 invalid_request) and a transaction without a challenge (409)", async () => {
    const s = await started()
    await app.advance("30 seconds")
    const res = await resend(s.txn, "chl_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
    expect([res.status, res.json.code]).toEqual([400, "invalid_request"])
    const fresh = await createTransaction(app, b, client)
    const res2 = await resend(fresh, s.challenge)
    expect([res2.status, res2.json.code]).toEqual([409, "invalid_transaction_state"])
  })
})

describe("complete", () => {
  it("returns a one-time authorization code and the state; creates the session; moves to code_issued", async () => {
    const since = app.now()
    const s = await started()
    expect((await verify(s.txn, s.challenge, s.code)).status).toBe(200)
    const res = await complete(s.txn)
    expect(res.status).toBe(200)
    expect(res.json).toEqual({
      transaction_id: s.txn,
      authorization_code: expect.any(String),
      state: "state-123",
      redirect_uri: client.redirect_uri,
      iss: b.issuer,
    })
    expect(res.headers["cache-control"]).toBe("no-store")
    expect(await transactionStatus(app, s.txn)).toBe("code_issued")
    expect(await countRows(app, "authorization_codes", "transaction_id = $1", [s.txn])).toBe(1)
    const stored = await query<{ code_hash: string; nonce: string; scopes: Array<string> }>(
      app,
      "select code_hash, nonce, scopes from authorization_codes where transaction_id = $1",
      [s.txn],
    )
    expect(stored[0]!.code_hash).not.toBe(res.json.authorization_code)
    expect(stored[0]!.nonce).toBe("nonce-123")
    expect((await events("session.created", since)).length).toBeGreaterThanOrEqual(1)
    expect((await events("login.succeeded", since)).map((e) => e.envelope.payload["method"])).toContain("email_otp")
    const again = await complete(s.txn)
    expect([again.status, again.json.code]).toEqual([409, "transaction_not_authenticated"])
  })

  it("race: concurrent completes -> exactly one code", async () => {
    const s = await started()
    expect((await verify(s.txn, s.challenge, s.code)).status).toBe(200)
    const results = await Promise.all(Array.from({ length: 8 }, () => complete(s.txn)))
    expect(results.filter((r) => r.status === 200)).toHaveLength(1)
    expect(results.filter((r) => r.status === 409 && r.json.code === "transaction_not_authenticated")).toHaveLength(7)
    expect(await countRows(app, "authorization_codes", "transaction_id = $1", [s.txn])).toBe(1)
    expect(
      await countRows(
        app,
        "login_sessions",
        "id in (select session_id from authorization_codes where transaction_id = $1)",
        [s.txn],
      ),
    ).toBe(1)
  })

  it("re-checks the redirect URI against the client's current registration", async () => {
    const own = await createClient(app, b, { redirect_uris: ["http://127.0.0.1:4998/cb"] })
    const txn = await createTransaction(app, b, own)
    const email = uniqueEmail()
    const st = await start(txn, email)
    const code = await smtp.waitForCode(email)
    expect((await verify(txn, st.json.challenge_id, code)).status).toBe(200)
    const patched = await app.management(`/v1/clients/${own.client_id}`, {
      method: "PATCH",
      body: { redirect_uris: ["http://127.0.0.1:4998/other"] },
    })
    expect(patched.status, patched.text).toBe(200)
    const res = await complete(txn)
    expect([res.status, res.json.code]).toEqual([400, "invalid_request"])
    expect(await transactionStatus(app, txn)).toBe("authenticated")
    expect(await countRows(app, "authorization_codes", "transaction_id = $1", [txn])).toBe(0)
  })

  it("a user blocked between verify and complete: 403 access_denied, no code", async () => {
    const s = await started()
    expect((await verify(s.txn, s.challenge, s.code)).status).toBe(200)
    await query(app, "update users set status = 'blocked' where environment_id = $1 and email_normalized = $2", [
      b.environment_id,
      s.email,
    ])
    const res = await complete(s.txn)
    expect([res.status, res.json.code]).toEqual([403, "access_denied"])
    expect(await countRows(app, "authorization_codes", "transaction_id = $1", [s.txn])).toBe(0)
  })

  it("the transaction's 10 minutes still apply after verify: 410 auth_transaction_expired", async () => {
    const s = await started()
    expect((await verify(s.txn, s.challenge, s.code)).status).toBe(200)
    await app.advance("10 minutes")
    const res = await complete(s.txn)
    expect([res.status, res.json.code]).toEqual([410, "auth_transaction_expired"])
    expect(await transactionStatus(app, s.txn)).toBe("expired")
  })
})
