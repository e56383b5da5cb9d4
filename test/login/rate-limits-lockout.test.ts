import { Clock, Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { sweepLogin } from "../../src/login/housekeeping.js"
import { KNOWN_ADDRESS } from "../../src/rate-limit/limits.js"
import * as rateLimit from "../../src/rate-limit/service.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import {
  createClient,
  type LoginClientInfo,
  loginMailsSettled,
  publicApi,
  query,
  type SmtpSink,
  startSmtpSink,
  transactionBody,
  transactionStatus,
  uniqueEmail,
} from "./support.js"

// docs/decisions/rate-limits-and-caches.md: strangers must not be able to lock others out. The test client on 127.0.0.1 is
// the one trusted proxy (TRUST_PROXY=1); X-Forwarded-For names the address of each caller.
let app: TestApp
let smtp: SmtpSink

beforeAll(async () => {
  smtp = await startSmtpSink()
  app = await startApp({
    worker: true,
    env: {
      SMTP_URL: smtp.url,
      TRUST_PROXY: "1",
      RATE_LIMIT_IP_PER_MINUTE: "5",
      RATE_LIMIT_CLIENT_PER_MINUTE: "12",
      RATE_LIMIT_EMAIL_PER_10_MINUTES: "2",
      RATE_LIMIT_EMAIL_CEILING_PER_HOUR: "9",
      RATE_LIMIT_OTP_VERIFY_PER_EMAIL_PER_MINUTE: "20",
      RATE_LIMIT_OTP_FAILURES_PER_EMAIL_PER_HOUR: "3",
      RATE_LIMIT_OTP_FAILURES_CEILING_PER_HOUR: "6",
      // Here every start from another address changes the email's code, as before that was
      // bounded; the bound itself is tested in ./email-otp-code-changes.test.ts.
      RATE_LIMIT_OTP_CODE_CHANGES_PER_EMAIL_PER_10_MINUTES: "1000",
    },
  })
})
afterAll(async () => {
  await app?.close()
  await smtp?.close()
})

const ATTACKER = "203.0.113.66"
const VICTIM = "198.51.100.20"

/** Each test gets its own Environment: counters are per Environment. */
const fresh = async () => {
  const b = await app.bootstrap()
  return { b, client: await createClient(app, b) }
}
const from = (ip: string) => ({ "x-forwarded-for": ip })
const create = (b: Bootstrapped, client: LoginClientInfo, ip: string) =>
  publicApi(app, b, "/auth/transactions", { body: transactionBody(client), headers: from(ip) })
const txnFrom = async (b: Bootstrapped, client: LoginClientInfo, ip: string) => {
  const res = await create(b, client, ip)
  expect(res.status, res.text).toBe(201)
  return res.json.transaction_id as string
}
const start = (b: Bootstrapped, txn: string, email: string, ip: string) =>
  publicApi(app, b, `/auth/transactions/${txn}/email/start`, { body: { email }, headers: from(ip) })

const verify = (b: Bootstrapped, txn: string, challenge_id: string, code: string, ip: string) =>
  publicApi(app, b, `/auth/transactions/${txn}/email/verify`, { body: { challenge_id, code }, headers: from(ip) })

/** A transaction from `ip` with a code mailed to `email`; the code is read from the SMTP sink. */
const startedFrom = async (b: Bootstrapped, client: LoginClientInfo, email: string, ip: string) => {
  const txn = await txnFrom(b, client, ip)
  // Earlier mails to this address (the attackers') are delivered or dropped first: the next one is ours.
  await loginMailsSettled(app)
  const before = smtp.messagesTo(email).length
  const res = await start(b, txn, email, ip)
  expect(res.status, res.text).toBe(202)
  const code = await smtp.waitForCode(email, before + 1)
  return { txn, challenge: res.json.challenge_id as string, code }
}
const wrong = (code: string) => (code === "000000" ? "111111" : "000000")

/** Wrong codes from `ip` against its own challenges for `email` until that address is refused. */
const guessUntilRefused = async (b: Bootstrapped, client: LoginClientInfo, email: string, ip: string) => {
  const txn = await txnFrom(b, client, ip)
  const st = await start(b, txn, email, ip)
  expect(st.status, st.text).toBe(202)
  const answers: Array<string> = []
  for (let i = 0; i < 10; i++) {
    const res = await verify(b, txn, st.json.challenge_id, "000000", ip)
    answers.push(res.json.code)
    if (res.status === 429) break
  }
  return answers
}

describe("login transactions: per address first, per client only as a ceiling", () => {
  it("an attacker from one address exhausting its limit does not block another address's login", async () => {
    const { b, client } = await fresh()
    const statuses: Array<number> = []
    for (let i = 0; i < 30; i++) statuses.push((await create(b, client, ATTACKER)).status)
    expect(statuses.slice(0, 5)).toEqual([201, 201, 201, 201, 201])
    expect(statuses.slice(5).every((s) => s === 429)).toBe(true)
    // 25 refused requests did not eat the client's ceiling (12): the victim signs in
    expect((await create(b, client, VICTIM)).status).toBe(201)
    // the same through /oauth2/authorize
    const authorize = await app.issuer(
      b.environment_id,
      `/oauth2/authorize?${new URLSearchParams({
        response_type: "code",
        client_id: client.client_id,
        redirect_uri: client.redirect_uri,
        scope: "openid",
        state: "s",
        nonce: "n",
        code_challenge: transactionBody(client).code_challenge,
        code_challenge_method: "S256",
      })}`,
      { headers: from("198.51.100.21") },
    )
    expect(authorize.status).toBe(302)
    const refused = await app.issuer(
      b.environment_id,
      `/oauth2/authorize?${new URLSearchParams({
        response_type: "code",
        client_id: client.client_id,
        redirect_uri: client.redirect_uri,
        scope: "openid",
        state: "s",
        nonce: "n",
        code_challenge: transactionBody(client).code_challenge,
        code_challenge_method: "S256",
      })}`,
      { headers: from(ATTACKER) },
    )
    // The authorize endpoint answers a person's browser with a page, never JSON, and never
    // bounces a flood to the client's redirect URI.
    expect(refused.status).toBe(429)
    expect(refused.headers["location"]).toBeUndefined()
    expect(refused.text).toContain('data-error="temporarily_unavailable"')
  })

  it("the per-client ceiling still holds across many addresses", async () => {
    const { b, client } = await fresh()
    for (let i = 1; i <= 12; i++) expect((await create(b, client, `198.51.100.${i}`)).status).toBe(201)
    const over = await create(b, client, "198.51.100.13")
    expect([over.status, over.json.code]).toEqual([429, "rate_limited"])
  })

  it("IPv6 counts per /64: addresses of one /64 share a budget, another /64 has its own", async () => {
    const { b, client } = await fresh()
    for (let i = 1; i <= 5; i++) expect((await create(b, client, `2001:db8:1:2::${i}`)).status).toBe(201)
    expect((await create(b, client, "2001:db8:1:2:ffff::9")).status).toBe(429)
    expect((await create(b, client, "2001:db8:1:3::1")).status).toBe(201)
  })
})

describe("Email OTP: a stranger flooding the victim's address", () => {
  it("does not stop the victim's own start and verification", async () => {
    const { b, client } = await fresh()
    const email = uniqueEmail("victim")
    // The attacker mails the victim until its address is refused ...
    const txn = await txnFrom(b, client, ATTACKER)
    const sends = [
      await start(b, txn, email, ATTACKER),
      await start(b, txn, email, ATTACKER),
      await start(b, txn, email, ATTACKER),
    ]
    expect(sends.map((r) => r.status)).toEqual([202, 202, 429])
    // ... and guesses at its own challenge until its address is refused for that email.
    const guesses: Array<string> = []
    for (let i = 0; i < 4; i++)
      guesses.push((await verify(b, txn, sends[1]!.json.challenge_id, "000000", ATTACKER)).json.code)
    expect(guesses).toEqual(["invalid_code", "invalid_code", "invalid_code", "rate_limited"])
    // The victim, from its own address, still gets a code and signs in.
    const victim = await startedFrom(b, client, email, VICTIM)
    const res = await verify(b, victim.txn, victim.challenge, victim.code, VICTIM)
    expect(res.status, res.text).toBe(200)
    expect(await transactionStatus(app, victim.txn)).toBe("authenticated")
  })

  it("past the all-addresses ceiling of wrong codes, a challenge's first attempt is still checked: the victim signs in", async () => {
    const { b, client } = await fresh()
    const email = uniqueEmail("victim")
    // Two attacker addresses spend 3 wrong codes each: the ceiling (6) is reached.
    expect((await guessUntilRefused(b, client, email, "203.0.113.1")).at(-1)).toBe("rate_limited")
    expect((await guessUntilRefused(b, client, email, "203.0.113.2")).at(-1)).toBe("rate_limited")
    const victim = await startedFrom(b, client, email, VICTIM)
    expect((await verify(b, victim.txn, victim.challenge, victim.code, VICTIM)).status).toBe(200)
  })

  it("past the ceiling, a second attempt on a challenge is refused unread, and concurrent first attempts count once", async () => {
    const { b, client } = await fresh()
    const email = uniqueEmail("victim")
    await guessUntilRefused(b, client, email, "203.0.113.1")
    await guessUntilRefused(b, client, email, "203.0.113.2")
    // A third address (its own budget untouched) fires five guesses at once at a fresh challenge.
    const other = await startedFrom(b, client, email, "203.0.113.3")
    const answers = await Promise.all(
      [0, 1, 2, 3, 4].map(() => verify(b, other.txn, other.challenge, wrong(other.code), "203.0.113.3")),
    )
    expect(answers.map((r) => r.json.code).sort()).toEqual([
      "invalid_code",
      "rate_limited",
      "rate_limited",
      "rate_limited",
      "rate_limited",
    ])
    const [row] = await query<{ failed_attempts: number; status: string }>(
      app,
      "select failed_attempts, status from email_challenges where id = $1",
      [other.challenge],
    )
    expect(row).toEqual({ failed_attempts: 1, status: "active" })
    // even the right code is not read after a wrong one while the ceiling holds
    const late = await verify(b, other.txn, other.challenge, other.code, "203.0.113.3")
    expect([late.status, late.json.code]).toEqual([429, "rate_limited"])
    expect(Number(late.headers["retry-after"])).toBeGreaterThan(0)
    expect(await transactionStatus(app, other.txn)).toBe("challenge_issued")
  })

  it("past the all-addresses mail ceiling, an address that signed in as the victim before still gets codes; others do not", async () => {
    const { b, client } = await fresh()
    const email = uniqueEmail("victim")
    // The victim signed in from its usual address earlier.
    const earlier = await startedFrom(b, client, email, VICTIM)
    expect((await verify(b, earlier.txn, earlier.challenge, earlier.code, VICTIM)).status).toBe(200)
    // Four attacker addresses mail the victim at their full rate (2 each): with the victim's 1, the ceiling (9) is reached.
    for (let i = 1; i <= 4; i++) {
      const txn = await txnFrom(b, client, `203.0.113.${i}`)
      for (let n = 0; n < 2; n++) expect((await start(b, txn, email, `203.0.113.${i}`)).status).toBe(202)
    }
    const stranger = await txnFrom(b, client, "203.0.113.9")
    const capped = await start(b, stranger, email, "203.0.113.9")
    expect([capped.status, capped.json.code]).toEqual([429, "rate_limited"])
    // A new device of the victim's elsewhere is capped too (the recorded trade-off) ...
    const elsewhere = await txnFrom(b, client, "198.51.100.99")
    expect((await start(b, elsewhere, email, "198.51.100.99")).status).toBe(429)
    // ... but its usual address gets a code and signs in.
    const again = await startedFrom(b, client, email, VICTIM)
    expect((await verify(b, again.txn, again.challenge, again.code, VICTIM)).status).toBe(200)
  })

  it("a remembered address is forgotten when its time is up (TestClock), and housekeeping deletes it", async () => {
    const { b } = await fresh()
    expect(KNOWN_ADDRESS.ttlMs).toBe(30 * 24 * 3600_000)
    // The same mechanism with a one-minute memory, so the shared clock moves only a minute.
    const memory = { bucket: "test_memory", ttlMs: 60_000 }
    const known = () => app.run(rateLimit.isRemembered(b.environment_id, memory, "someone\u0000198.51.100.20"))
    await app.run(rateLimit.remember(b.environment_id, memory, "someone\u0000198.51.100.20"))
    expect(await known()).toBe(true)
    await app.advance("59 seconds")
    expect(await known()).toBe(true)
    await app.advance("1 second")
    expect(await known()).toBe(false)
    await app.run(Effect.flatMap(Clock.currentTimeMillis, (now) => sweepLogin(new Date(now))))
    expect(
      await query(app, "select 1 from rate_limit_counters where environment_id = $1 and bucket = 'test_memory'", [
        b.environment_id,
      ]),
    ).toEqual([])
  })
})
