import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import {
  countRows,
  createClient,
  createTransaction,
  publicApi,
  query,
  transactionBody,
  uniqueEmail,
} from "./support.js"

// Small limits so each one is reached in a few requests (RATE_LIMIT_*; defaults in docs/decisions/rate-limits-and-caches.md).
let app: TestApp

beforeAll(async () => {
  app = await startApp({
    env: {
      RATE_LIMIT_CLIENT_PER_MINUTE: "3",
      RATE_LIMIT_IP_PER_MINUTE: "6",
      RATE_LIMIT_EMAIL_PER_10_MINUTES: "2",
      RATE_LIMIT_OTP_VERIFY_PER_EMAIL_PER_MINUTE: "4",
      RATE_LIMIT_OTP_FAILURES_PER_EMAIL_PER_HOUR: "7",
    },
  })
})
afterAll(async () => {
  await app?.close()
})

/** Each test gets its own Environment: counters are per Environment. */
const fresh = async () => {
  const b = await app.bootstrap()
  return { b, client: await createClient(app, b) }
}

const expectRateLimited = (
  res: { status: number; json: any; headers: Record<string, unknown> },
  code = "rate_limited",
) => {
  expect([res.status, res.json.code]).toEqual([429, code])
  expect(Number(res.headers["retry-after"])).toBeGreaterThan(0)
}

const start = (b: Bootstrapped, txn: string, email: string) =>
  publicApi(app, b, `/auth/transactions/${txn}/email/start`, { body: { email } })
const verify = (b: Bootstrapped, txn: string, challenge_id: string, code: string) =>
  publicApi(app, b, `/auth/transactions/${txn}/email/verify`, { body: { challenge_id, code } })

/** Seconds left in the current fixed window of `windowMs` (for exact Retry-After checks). */
const leftInWindow = (windowMs: number) => Math.ceil((windowMs - (app.now() % windowMs)) / 1000)

describe("per client on transaction create", () => {
  it("the 4th creation within a minute is 429 rate_limited with Retry-After; counters include refused requests", async () => {
    const { b, client } = await fresh()
    await createTransaction(app, b, client)
    // a request that fails validation still counts
    const bad = await publicApi(app, b, "/auth/transactions", {
      body: transactionBody(client, { redirect_uri: "https://nope.example.com/cb" }),
    })
    expect([bad.status, bad.json.code]).toEqual([400, "invalid_request"])
    await createTransaction(app, b, client)
    const before = await countRows(app, "auth_transactions", "environment_id = $1", [b.environment_id])
    const res = await publicApi(app, b, "/auth/transactions", { body: transactionBody(client) })
    expectRateLimited(res)
    expect(Number(res.headers["retry-after"])).toBe(leftInWindow(60_000))
    expect(await countRows(app, "auth_transactions", "environment_id = $1", [b.environment_id])).toBe(before)
    // another client of the same Environment has its own budget
    const other = await createClient(app, b)
    expect((await publicApi(app, b, "/auth/transactions", { body: transactionBody(other) })).status).toBe(201)
    // the next window opens again
    await app.advance(`${leftInWindow(60_000)} seconds`)
    expect((await publicApi(app, b, "/auth/transactions", { body: transactionBody(client) })).status).toBe(201)
  })
})

describe("OTP start", () => {
  it("per email from one client address: the 3rd mail to one address within 10 minutes is 429; other addresses are not affected", async () => {
    const { b, client } = await fresh()
    const email = uniqueEmail()
    for (let i = 0; i < 2; i++) {
      const txn = await createTransaction(app, b, client)
      expect((await start(b, txn, email)).status).toBe(202)
    }
    const txn = await createTransaction(app, b, client)
    expectRateLimited(await start(b, txn, email))
    expectRateLimited(await start(b, txn, email.toUpperCase()))
    expect((await start(b, txn, uniqueEmail())).status).toBe(202)
    await app.advance("10 minutes")
    const later = await createTransaction(app, b, client)
    expect((await start(b, later, email)).status).toBe(202)
  })

  it("per IP: the 7th mail request from one address within a minute is 429", async () => {
    await app.advance(`${leftInWindow(60_000)} seconds`)
    const { b, client } = await fresh()
    const txn = await createTransaction(app, b, client)
    for (let i = 0; i < 6; i++) expect((await start(b, txn, uniqueEmail())).status).toBe(202)
    const res = await start(b, txn, uniqueEmail())
    expectRateLimited(res)
    // the refused start sent nothing: 6 challenges, all but the last superseded
    expect(await countRows(app, "email_challenges", "transaction_id = $1", [txn])).toBe(6)
  })
})

describe("OTP verify", () => {
  it("per email from one client address: the 5th verify for one address within a minute is 429 (before the code is even looked at)", async () => {
    await app.advance(`${leftInWindow(60_000)} seconds`)
    const { b, client } = await fresh()
    const txn = await createTransaction(app, b, client)
    const st = await start(b, txn, uniqueEmail())
    for (let i = 0; i < 4; i++) expect((await verify(b, txn, st.json.challenge_id, "000000")).status).toBe(400)
    expectRateLimited(await verify(b, txn, st.json.challenge_id, "000000"))
    const rows = await query<{ failed_attempts: number }>(
      app,
      "select failed_attempts from email_challenges where id = $1",
      [st.json.challenge_id],
    )
    expect(rows[0]!.failed_attempts).toBe(4)
  })

  it("per IP: the 7th verify from one address within a minute is 429", async () => {
    await app.advance(`${leftInWindow(60_000)} seconds`)
    const { b, client } = await fresh()
    const txn = await createTransaction(app, b, client)
    const a = await start(b, txn, uniqueEmail())
    for (let i = 0; i < 4; i++)
      expect((await verify(b, txn, a.json.challenge_id, "000000")).json.code).toBe("invalid_code")
    const other = await start(b, txn, uniqueEmail())
    for (let i = 0; i < 2; i++)
      expect((await verify(b, txn, other.json.challenge_id, "000000")).json.code).toBe("invalid_code")
    expectRateLimited(await verify(b, txn, other.json.challenge_id, "000000"))
    const rows = await query<{ failed_attempts: number }>(
      app,
      "select failed_attempts from email_challenges where id = $1",
      [other.json.challenge_id],
    )
    expect(rows[0]!.failed_attempts).toBe(2)
  })

  it("wrong codes are capped per email (from one client address) across challenges: after 7 in an hour, every verify is 429", async () => {
    await app.advance(`${leftInWindow(3_600_000)} seconds`)
    const { b, client } = await fresh()
    const email = uniqueEmail()
    const txn1 = await createTransaction(app, b, client)
    const st1 = await start(b, txn1, email)
    for (let i = 0; i < 4; i++)
      expect((await verify(b, txn1, st1.json.challenge_id, "000000")).json.code).toBe("invalid_code")
    await app.advance("1 minute")
    expect((await verify(b, txn1, st1.json.challenge_id, "000000")).json.code).toBe("invalid_code") // 5th: invalidated
    const txn2 = await createTransaction(app, b, client)
    const st2 = await start(b, txn2, email)
    expect(st2.status).toBe(202)
    expect((await verify(b, txn2, st2.json.challenge_id, "000000")).json.code).toBe("invalid_code") // 6th
    expect((await verify(b, txn2, st2.json.challenge_id, "000000")).json.code).toBe("invalid_code") // 7th
    const capped = await verify(b, txn2, st2.json.challenge_id, "000000")
    expectRateLimited(capped)
    const rows = await query<{ failed_attempts: number }>(
      app,
      "select failed_attempts from email_challenges where id = $1",
      [st2.json.challenge_id],
    )
    expect(rows[0]!.failed_attempts).toBe(2)
  })
})
