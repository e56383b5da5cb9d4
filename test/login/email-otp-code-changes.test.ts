import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { loginLimits } from "../../src/rate-limit/limits.js"
import * as rateLimit from "../../src/rate-limit/service.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import type { TestResponse } from "../support/http.js"
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

// docs/decisions/security-hardening.md: "one valid code at a time per Environment + email + purpose" let any stranger's
// start kill the code a victim was about to type. A start or resend now changes the email's
// code against someone relying on it at most once per 10 minutes per email (the default
// budget); beyond that it is withheld: the same 202, no code, no mail, and its challenge
// verifies against the code already mailed. The test client on 127.0.0.1 is the one trusted
// proxy (TRUST_PROXY=1); X-Forwarded-For names each caller's address.
let app: TestApp
let smtp: SmtpSink

beforeAll(async () => {
  smtp = await startSmtpSink()
  app = await startApp({
    worker: true,
    env: {
      SMTP_URL: smtp.url,
      TRUST_PROXY: "1",
      // Per-address limits high: here the attacker is stopped by the code-change budget alone.
      RATE_LIMIT_IP_PER_MINUTE: "200",
      RATE_LIMIT_EMAIL_PER_10_MINUTES: "100",
    },
  })
})
afterAll(async () => {
  await app?.close()
  await smtp?.close()
})

const VICTIM = "198.51.100.20"
const ATTACKERS = ["203.0.113.1", "203.0.113.2", "2001:db8:66:1::1", "203.0.113.3"]
const WINDOW_MS = 10 * 60_000

/** Each test gets its own Environment (counters are per Environment) at the start of a fresh 10-minute window. */
const fresh = async () => {
  await app.advance(`${WINDOW_MS - (app.now() % WINDOW_MS) + 1_000} millis`)
  const b = await app.bootstrap()
  return { b, client: await createClient(app, b) }
}
const from = (ip: string) => ({ "x-forwarded-for": ip })
const txnFrom = async (b: Bootstrapped, client: LoginClientInfo, ip: string) => {
  const res = await publicApi(app, b, "/auth/transactions", { body: transactionBody(client), headers: from(ip) })
  expect(res.status, res.text).toBe(201)
  return res.json.transaction_id as string
}
const start = (b: Bootstrapped, txn: string, email: string, ip: string) =>
  publicApi(app, b, `/auth/transactions/${txn}/email/start`, { body: { email }, headers: from(ip) })
const resend = (b: Bootstrapped, txn: string, challenge_id: string, ip: string) =>
  publicApi(app, b, `/auth/transactions/${txn}/email/resend`, { body: { challenge_id }, headers: from(ip) })
const verify = (b: Bootstrapped, txn: string, challenge_id: string, code: string, ip: string) =>
  publicApi(app, b, `/auth/transactions/${txn}/email/verify`, { body: { challenge_id, code }, headers: from(ip) })

/**
 * A start from `ip` on a new transaction; 202 expected. Its mail (if any) is delivered before
 * this returns: the worker sends mails concurrently, so without that the mails of two starts
 * in a row could arrive in either order and "the newest mail" would be a guess.
 */
const startedFrom = async (b: Bootstrapped, client: LoginClientInfo, email: string, ip: string) => {
  const txn = await txnFrom(b, client, ip)
  const res = await start(b, txn, email, ip)
  expectNormalAnswer(res)
  await loginMailsSettled(app)
  return { txn, challenge: res.json.challenge_id as string }
}

/** Every start answer has one shape: 202, exactly these fields, the code's 5 minutes from now, no-store. */
const expectNormalAnswer = (res: TestResponse) => {
  expect(res.status, res.text).toBe(202)
  expect(Object.keys(res.json).sort()).toEqual(["challenge_id", "expires_at"])
  expect(res.json.challenge_id).toMatch(/^chl_[a-z2-7]{32}$/)
  expect(res.json.expires_at).toBe(new Date(app.now() + 5 * 60_000).toISOString())
  expect(res.headers["content-type"]).toBe("application/json")
  expect(res.headers["cache-control"]).toBe("no-store")
}

/** The codes mailed to `email` so far, oldest first (every earlier mail job has run). */
const mailedCodes = async (email: string) => {
  await loginMailsSettled(app)
  return smtp.messagesTo(email).map((m) => /sign-in code is (\d{6})/.exec(m.raw)![1]!)
}
const statusOf = async (challengeId: string) =>
  (await query<{ status: string }>(app, "select status from email_challenges where id = $1", [challengeId]))[0]!.status
const wrong = (code: string) => (code === "000000" ? "111111" : "000000")

describe("Email OTP: a stranger cannot keep changing someone's code", () => {
  it("interleaved: a stranger starting again and again between the victim's start and verify changes the code once; the victim signs in with the newest mail", async () => {
    const { b, client } = await fresh()
    const email = uniqueEmail("victim")
    const first = await startedFrom(b, client, email, VICTIM)
    expect(await mailedCodes(email)).toHaveLength(1)
    // The attacker's first start spends the email's budget and changes the code (a mail).
    const attacker = await startedFrom(b, client, email, ATTACKERS[0]!)
    const afterFirst = await mailedCodes(email)
    expect(afterFirst).toHaveLength(2)
    expect(await statusOf(first.challenge)).toBe("superseded")
    // The victim's next start (its code was taken) cannot change the code back: it is withheld,
    // and verifies against the code mailed last.
    const victim = await startedFrom(b, client, email, VICTIM)
    expect(await statusOf(victim.challenge)).toBe("withheld")
    // Between that start and the verify, the attacker starts again and again from every
    // address it has, restarts its own transaction and resends its challenge: every answer is
    // the same 202, and nothing changes the code or sends a mail.
    for (let round = 0; round < 3; round++) {
      for (const ip of ATTACKERS) {
        const again = await startedFrom(b, client, email, ip)
        expect(await statusOf(again.challenge)).toBe("withheld")
      }
      expectNormalAnswer(await start(b, attacker.txn, email, ATTACKERS[0]!))
    }
    const holder = await query<{ id: string; transaction_id: string }>(
      app,
      "select id, transaction_id from email_challenges where environment_id = $1 and email_normalized = $2 and status = 'active'",
      [b.environment_id, email],
    )
    expect(holder).toHaveLength(1)
    await app.advance("31 seconds")
    const resent = await resend(b, holder[0]!.transaction_id, holder[0]!.id, ATTACKERS[0]!)
    expect(resent.status, resent.text).toBe(202)
    expect(await mailedCodes(email)).toEqual(afterFirst)
    // Only mails sent count against the email's all-addresses mail ceiling: withheld starts do
    // not use it up for the owner.
    const ceiling = await query<{ hits: number }>(
      app,
      "select hits from rate_limit_counters where environment_id = $1 and bucket = 'otp_send:email'",
      [b.environment_id],
    )
    expect(ceiling.map((r) => r.hits)).toEqual([2])
    // The attacker does not have the code: its guesses on its own (withheld) challenge are wrong
    // codes like any other.
    const [own] = await query<{ id: string }>(
      app,
      "select id from email_challenges where transaction_id = $1 and status = 'withheld'",
      [attacker.txn],
    )
    const guess = await verify(b, attacker.txn, own!.id, wrong(afterFirst.at(-1)!), ATTACKERS[0]!)
    expect([guess.status, guess.json.code]).toEqual([400, "invalid_code"])
    // The victim types the newest code it received and signs in.
    const ok = await verify(b, victim.txn, victim.challenge, afterFirst.at(-1)!, VICTIM)
    expect(ok.status, ok.text).toBe(200)
    expect(await transactionStatus(app, victim.txn)).toBe("authenticated")
    // One code signs in once: the code's own challenge is used up.
    expect(await statusOf(holder[0]!.id)).toBe("consumed")
    // The audit trail says which starts were withheld.
    const audits = await query<{ details: { withheld?: boolean; delivered: boolean } }>(
      app,
      "select details from audit_events where environment_id = $1 and action = 'login.email_otp_sent' order by created_at, id",
      [b.environment_id],
    )
    expect(audits.filter((a) => a.details.withheld === true).every((a) => a.details.delivered === false)).toBe(true)
    expect(audits.filter((a) => a.details.delivered)).toHaveLength(2)
  }, 60_000)

  it("the budget is per email and per 10 minutes (TestClock): once spent, the code holder's code verifies whatever strangers send; the next window allows one change again", async () => {
    const { b, client } = await fresh()
    const email = uniqueEmail("holder")
    // The victim starts on a laptop, then on a phone on another network: the budget lets the phone's code replace it.
    await startedFrom(b, client, email, VICTIM)
    // (Its mail has gone out before the next start: a mail job that finds its code replaced sends nothing.)
    expect(await mailedCodes(email)).toHaveLength(1)
    const phone = await startedFrom(b, client, email, "198.51.100.77")
    const codes = await mailedCodes(email)
    expect(codes).toHaveLength(2)
    // The budget is spent: no stranger changes the phone's code now.
    for (const ip of ATTACKERS)
      expect(await statusOf((await startedFrom(b, client, email, ip)).challenge)).toBe("withheld")
    expect(await mailedCodes(email)).toHaveLength(2)
    // Another email has its own budget.
    const other = uniqueEmail("other")
    await startedFrom(b, client, other, VICTIM)
    expect(await statusOf((await startedFrom(b, client, other, ATTACKERS[0]!)).challenge)).toBe("active")
    // The next window (every code has expired: the first start changes nothing anyone relies on),
    // then one change against someone again, then none.
    await app.advance(`${WINDOW_MS} millis`)
    const phone2 = await startedFrom(b, client, email, "198.51.100.77")
    expect(await statusOf(phone2.challenge)).toBe("active")
    const changed = await startedFrom(b, client, email, ATTACKERS[1]!)
    expect(await statusOf(changed.challenge)).toBe("active")
    expect(await statusOf((await startedFrom(b, client, email, ATTACKERS[2]!)).challenge)).toBe("withheld")
    expect(await statusOf(phone.challenge)).toBe("superseded")
  }, 60_000)

  it("race: strangers from six addresses start at once against a live code: exactly one changes it", async () => {
    const { b, client } = await fresh()
    const email = uniqueEmail("race")
    await startedFrom(b, client, email, VICTIM)
    expect(await mailedCodes(email)).toHaveLength(1)
    const ips = ["203.0.113.11", "203.0.113.12", "203.0.113.13", "203.0.113.14", "203.0.113.15", "203.0.113.16"]
    const txns = await Promise.all(ips.map((ip) => txnFrom(b, client, ip)))
    const answers = await Promise.all(ips.map((ip, i) => start(b, txns[i]!, email, ip)))
    for (const res of answers) expectNormalAnswer(res)
    const statuses = await Promise.all(answers.map((res) => statusOf(res.json.challenge_id)))
    expect(statuses.sort()).toEqual(["active", "withheld", "withheld", "withheld", "withheld", "withheld"])
    expect(await mailedCodes(email)).toHaveLength(2)
  }, 60_000)

  it("a code held by a stranger: the victim relying on it cannot have it renewed away by the holder; once it has expired, the victim's resend takes over", async () => {
    const { b, client } = await fresh()
    const email = uniqueEmail("prehold")
    // Two stranger addresses spend the budget; the second holds the code.
    await startedFrom(b, client, email, ATTACKERS[0]!)
    expect(await mailedCodes(email)).toHaveLength(1)
    const holder = await startedFrom(b, client, email, ATTACKERS[1]!)
    const mailed = await mailedCodes(email)
    expect(mailed).toHaveLength(2)
    // The victim arrives: withheld, relying on the held code (mailed to the victim's address).
    const victim = await startedFrom(b, client, email, VICTIM)
    expect(await statusOf(victim.challenge)).toBe("withheld")
    // The holder's own resend and restart would change a code someone relies on: nothing changes.
    await app.advance("31 seconds")
    expect((await resend(b, holder.txn, holder.challenge, ATTACKERS[1]!)).status).toBe(202)
    expectNormalAnswer(await start(b, holder.txn, email, ATTACKERS[1]!))
    expect(await mailedCodes(email)).toEqual(mailed)
    expect(await statusOf(holder.challenge)).toBe("active")
    // The victim's resend while the held code lives: still withheld, nothing mailed.
    expect((await resend(b, victim.txn, victim.challenge, VICTIM)).status).toBe(202)
    expect(await statusOf(victim.challenge)).toBe("withheld")
    // The held code expires (5 minutes from its mail); the victim's next resend becomes the code holder.
    await app.advance("5 minutes")
    const taken = await resend(b, victim.txn, victim.challenge, VICTIM)
    expect(taken.status, taken.text).toBe(202)
    expect(await statusOf(victim.challenge)).toBe("active")
    const code = (await mailedCodes(email)).at(-1)!
    expect(await mailedCodes(email)).toHaveLength(3)
    // The code the victim used to rely on is gone; the new one signs in.
    expect((await verify(b, victim.txn, victim.challenge, mailed.at(-1)!, VICTIM)).json.code).toBe("invalid_code")
    expect((await verify(b, victim.txn, victim.challenge, code, VICTIM)).status).toBe(200)
  }, 60_000)

  it("an address that signed in as the email before changes the code whatever the budget, with a fresh mail", async () => {
    const { b, client } = await fresh()
    const email = uniqueEmail("returning")
    const earlier = await startedFrom(b, client, email, VICTIM)
    expect((await verify(b, earlier.txn, earlier.challenge, (await mailedCodes(email)).at(-1)!, VICTIM)).status).toBe(
      200,
    )
    // Strangers spend the budget and hold the code, and one relies on it.
    await startedFrom(b, client, email, ATTACKERS[0]!)
    await startedFrom(b, client, email, ATTACKERS[1]!)
    expect(await statusOf((await startedFrom(b, client, email, ATTACKERS[2]!)).challenge)).toBe("withheld")
    const before = (await mailedCodes(email)).length
    const again = await startedFrom(b, client, email, VICTIM)
    expect(await statusOf(again.challenge)).toBe("active")
    const codes = await mailedCodes(email)
    expect(codes).toHaveLength(before + 1)
    expect((await verify(b, again.txn, again.challenge, codes.at(-1)!, VICTIM)).status).toBe(200)
  }, 60_000)

  it("a withheld challenge counts wrong codes like any other (the 5th invalidates it) and gets no free first guess past the all-addresses failure ceiling", async () => {
    const { b, client } = await fresh()
    const email = uniqueEmail("guess")
    await startedFrom(b, client, email, VICTIM)
    await startedFrom(b, client, email, ATTACKERS[0]!)
    const code = (await mailedCodes(email)).at(-1)!
    const withheld = await startedFrom(b, client, email, ATTACKERS[1]!)
    const answers: Array<string> = []
    for (let i = 0; i < 5; i++)
      answers.push((await verify(b, withheld.txn, withheld.challenge, wrong(code), ATTACKERS[1]!)).json.detail)
    expect(answers).toEqual([
      "Wrong code",
      "Wrong code",
      "Wrong code",
      "Wrong code",
      "Wrong code; too many attempts, start again",
    ])
    expect(await statusOf(withheld.challenge)).toBe("invalidated")
    // even the right code does not revive it
    expect((await verify(b, withheld.txn, withheld.challenge, code, ATTACKERS[1]!)).json.code).toBe("invalid_code")

    // Past the all-addresses ceiling of wrong codes (50 an hour) a challenge whose own code was
    // mailed still has its first attempt checked; a withheld one (never bounded by the mail
    // ceiling) is refused unread, even with the right code.
    const limit = loginLimits(app.config).otpFailuresPerEmail
    await app.run(
      Effect.forEach(Array.from({ length: limit.limit }), () => rateLimit.record(b.environment_id, limit, email)),
    )
    const late = await startedFrom(b, client, email, ATTACKERS[2]!)
    expect(await statusOf(late.challenge)).toBe("withheld")
    const refused = await verify(b, late.txn, late.challenge, code, ATTACKERS[2]!)
    expect([refused.status, refused.json.code]).toEqual([429, "rate_limited"])
    const holder = (
      await query<{ id: string; transaction_id: string }>(
        app,
        "select id, transaction_id from email_challenges where environment_id = $1 and email_normalized = $2 and status = 'active'",
        [b.environment_id, email],
      )
    )[0]!
    expect((await verify(b, holder.transaction_id, holder.id, code, ATTACKERS[0]!)).status).toBe(200)
  }, 60_000)
})
