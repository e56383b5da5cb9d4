import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import pg from "pg"
import { emailAddressSubject, KNOWN_ADDRESS, loginLimits } from "../../src/rate-limit/limits.js"
import * as rateLimit from "../../src/rate-limit/service.js"
import { afterAll, describe, expect, it } from "vitest"
import { startSmtpSink } from "../login/support.js"
import { publicApi, startTransaction } from "../passkeys/support/flow.js"
import { recipientHash } from "../../src/bounces/recipient.js"
import {
  count,
  createUser,
  randomId,
  expectProblem,
  insertIdentity,
  introspect,
  me,
  query,
  signIn,
  signedInUser,
  uniqueEmail,
  useMeApp,
  userEvents,
  userinfo,
  withTableAway,
} from "./support.js"

// Email change (spec: Self-service /me, email change rows; /me rule 3; Limits: email-change
// challenge lifetime 5 minutes, Email OTP 6 digits and 5 wrong verifies; Errors: 409
// email_already_registered). Codes travel through the real mail job (graphile-worker) to a
// real SMTP server on loopback.

let smtp: Awaited<ReturnType<typeof startSmtpSink>>
// Registered first so that it runs last (hooks unwind as a stack): the app's worker may still
// be sending a notice while it stops.
afterAll(async () => {
  await smtp?.close()
})
const ctx = useMeApp(async () => {
  smtp = await startSmtpSink()
  return { worker: true, env: { SMTP_URL: smtp.url } }
})

/** Waits (real time: the worker polls) for the n-th message to `to`; returns its decoded text. */
const waitForMail = async (to: string, nth: number) => {
  const deadline = Date.now() + 15_000
  for (;;) {
    const mine = smtp.messagesTo(to)
    if (mine.length >= nth) return mine[nth - 1]!.raw.replace(/=\r?\n/g, "")
    if (Date.now() > deadline) throw new Error(`no message #${nth} to ${to}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}
/**
 * Waits for the message that is `nth` to `to`, then returns its code. Callers count the messages
 * before the request that sends one: the worker may deliver it before the request's answer is read.
 */
const codeOf = async (to: string, nth: number) => /confirmation code is (\d{6})/.exec(await waitForMail(to, nth))![1]!

const wrong = (code: string) => (code === "000000" ? "111111" : "000000")

const start = (token: string, new_email: string) => me(ctx, token, "/email/change/start", { body: { new_email } })
const verifyOld = (token: string, challenge_id: string, code: string) =>
  me(ctx, token, "/email/change/verify-old", { body: { challenge_id, code } })
const verifyNew = (token: string, challenge_id: string, code: string) =>
  me(ctx, token, "/email/change/verify-new", { body: { challenge_id, code } })

/** Runs start and verify-old; returns the challenge for the new address and its code. */
const toNewStage = async (token: string, oldEmail: string, newEmail: string) => {
  const sentBefore = smtp.messagesTo(oldEmail).length
  const started = await start(token, newEmail)
  expect(started.status, started.text).toBe(202)
  const oldCode = await codeOf(oldEmail, sentBefore + 1)
  const newBefore = smtp.messagesTo(newEmail).length
  const old = await verifyOld(token, started.json.challenge_id, oldCode)
  expect(old.status, old.text).toBe(202)
  return {
    challenge: old.json.challenge_id as string,
    code: await codeOf(newEmail, newBefore + 1),
    first: started.json.challenge_id as string,
  }
}

const stored = async (userId: string) =>
  (
    await query<{ email: string; email_verified: boolean; security_version: number }>(
      ctx.app,
      "select email, email_verified, security_version from users where id = $1",
      [userId],
    )
  )[0]!

describe("the whole change: start -> verify-old -> verify-new", () => {
  it("proves both addresses, switches, kills earlier tokens everywhere, notifies the old address", async () => {
    const { user, token, tokens, sid } = await signedInUser(ctx, "change")
    const newEmail = uniqueEmail("new")

    const started = await start(token, newEmail)
    expect(started.status, started.text).toBe(202)
    expect(Object.keys(started.json).sort()).toEqual(["challenge_id", "expires_at"])
    expect(started.headers["cache-control"]).toBe("no-store")
    expect(Date.parse(started.json.expires_at)).toBe(ctx.app.now() + 5 * 60_000)
    // the first code goes to the CURRENT address, and nothing to the new one yet
    const oldMail = await waitForMail(user.email, 1)
    expect(oldMail).toContain("change the email address")
    const oldCode = /confirmation code is (\d{6})/.exec(oldMail)![1]!
    expect(smtp.messagesTo(newEmail)).toHaveLength(0)

    const old = await verifyOld(token, started.json.challenge_id, oldCode)
    expect(old.status, old.text).toBe(202)
    expect(Object.keys(old.json).sort()).toEqual(["challenge_id", "expires_at"])
    expect(old.json.challenge_id).not.toBe(started.json.challenge_id)
    const newCode = await codeOf(newEmail, 1)
    // the address is not switched before the new one is proven
    expect((await stored(user.id)).email).toBe(user.email)
    expect((await me(ctx, token, "")).json.email).toBe(user.email)

    const done = await verifyNew(token, old.json.challenge_id, newCode)
    expect(done.status, done.text).toBe(200)
    expect(done.json).toEqual({ email: newEmail, email_verified: true })
    expect(await stored(user.id)).toEqual({
      email: newEmail,
      email_verified: true,
      security_version: user.security_version + 1,
    })

    // every access token issued before the change is inactive: /me, UserInfo, introspection
    expectProblem(await me(ctx, token, ""), 401, "invalid_token")
    const info = await userinfo(ctx, token)
    expect(info.status).toBe(401)
    expect(info.json.code).toBe("invalid_token")
    expect((await introspect(ctx, token)).json).toEqual({ active: false })
    // and the user must sign in again: the session ended, its refresh token too
    expect(
      (
        await ctx.app.issuer(ctx.b.environment_id, "/oauth2/token", {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({
            grant_type: "refresh_token",
            refresh_token: tokens.refresh_token,
            client_id: ctx.client.client_id,
          }).toString(),
        })
      ).json.error,
    ).toBe("invalid_grant")

    // events with exact payloads
    const updated = await userEvents(ctx, "user.updated", user.id)
    expect(updated.map((e) => e.payload)).toEqual([{ userId: user.id, changedFields: ["email"] }])
    expect(updated[0].actor).toEqual({ type: "end_user", id: user.id })
    expect((await userEvents(ctx, "session.revoked", user.id)).map((e) => e.payload)).toEqual([
      { userId: user.id, sessionId: sid, reason: "user_logout" },
    ])

    // the notice reaches the old address, naming the new one only masked
    const notice = await waitForMail(user.email, 2)
    expect(notice).toContain("was changed")
    expect(notice).not.toContain(newEmail)
    expect(notice).not.toMatch(/code is \d{6}/)
    expect(smtp.messagesTo(newEmail)).toHaveLength(1)

    // a new sign-in sees the new address
    const again = await signIn(ctx, { ...user, email: newEmail })
    expect((await me(ctx, again.tokens.access_token, "")).json).toMatchObject({ email: newEmail, email_verified: true })
    expect(
      await count(ctx.app, "select count(*) as n from email_challenges where user_id = $1 and status = 'active'", [
        user.id,
      ]),
    ).toBe(0)
  })

  it("an unverified address becomes verified: changedFields names email and email_verified", async () => {
    const user = await createUser(ctx.app, ctx.b, uniqueEmail("unverified"))
    await query(ctx.app, "update users set email_verified = false where id = $1", [user.id])
    const { tokens } = await signIn(ctx, user)
    const newEmail = uniqueEmail("verified")
    const stage = await toNewStage(tokens.access_token, user.email, newEmail)
    expect((await verifyNew(tokens.access_token, stage.challenge, stage.code)).json).toEqual({
      email: newEmail,
      email_verified: true,
    })
    expect((await userEvents(ctx, "user.updated", user.id)).map((e) => e.payload)).toEqual([
      { userId: user.id, changedFields: ["email", "email_verified"] },
    ])
  })
})

describe("the suppression flag follows the address (bounces are kept per address)", () => {
  /** A hard bounce of `email` in this Environment, as the bounce intake records it (src/bounces). */
  const suppressAddress = (email: string) =>
    ctx.app.run(
      Effect.gen(function* () {
        const hash = yield* recipientHash(ctx.b.workspace_id, email)
        yield* SqlClient.SqlClient.use(
          (sql) => sql`insert into email_suppressions (environment_id, recipient_hash, delivery_id, created_at)
      values (${ctx.b.environment_id}, ${hash}, ${randomId("dlv")}, ${new Date(ctx.app.now())})`,
        )
      }),
    )
  const suppressedFlag = async (userId: string) =>
    (
      await query<{ email_suppressed: boolean }>(ctx.app, "select email_suppressed from users where id = $1", [userId])
    )[0]!.email_suppressed
  /** Unlinking an identity whose provider has no connection: allowed only while the email counts as a way to sign in. */
  const unlinkLeavesEmailOnly = async (user: { id: string; email: string }, newEmail: string) => {
    const { tokens } = await signIn(ctx, { ...user, email: newEmail } as Parameters<typeof signIn>[1])
    return me(ctx, tokens.access_token, `/identities/${await insertIdentity(ctx, user.id, "no-connection")}`, {
      method: "DELETE",
    })
  }

  it("switching away from a hard-bounced address clears the flag: the new address gets login codes and counts as a way to sign in", async () => {
    const { user, token } = await signedInUser(ctx, "bounced-old")
    const newEmail = uniqueEmail("fresh-new")
    const stage = await toNewStage(token, user.email, newEmail)
    // the old address hard-bounces meanwhile
    await suppressAddress(user.email)
    await query(ctx.app, "update users set email_suppressed = true where id = $1", [user.id])
    expect((await verifyNew(token, stage.challenge, stage.code)).status).toBe(200)
    expect(await suppressedFlag(user.id)).toBe(false)
    // an Email OTP login to the new address is mailed
    const mails = smtp.messagesTo(newEmail).length
    const txn = await startTransaction(ctx.app, ctx.b, ctx.client)
    expect(
      (await publicApi(ctx.app, ctx.b, `/auth/transactions/${txn.id}/email/start`, { body: { email: newEmail } }))
        .status,
    ).toBe(202)
    expect(await waitForMail(newEmail, mails + 1)).toContain("sign-in code is")
    // and the verified, unsuppressed address is a way to sign in (DESIGN, Last factor)
    expect((await unlinkLeavesEmailOnly(user, newEmail)).status).toBe(200)
  })

  it("switching to an address that hard-bounced before sets the flag", async () => {
    const { user, token } = await signedInUser(ctx, "clean-old")
    const newEmail = uniqueEmail("bounced-new")
    const stage = await toNewStage(token, user.email, newEmail)
    await suppressAddress(newEmail)
    expect(await suppressedFlag(user.id)).toBe(false)
    expect((await verifyNew(token, stage.challenge, stage.code)).status).toBe(200)
    expect(await suppressedFlag(user.id)).toBe(true)
    expectProblem(await unlinkLeavesEmailOnly(user, newEmail), 400, "last_factor_deletion_requires_confirmation")
  })
})

describe("refusals change nothing", () => {
  it("start: malformed, missing, own or another account's address", async () => {
    const { user, token } = await signedInUser(ctx, "start-refusals")
    const other = await signedInUser(ctx, "taken")
    expectProblem(await start(token, "not-an-email"), 400, "invalid_request")
    expectProblem(await me(ctx, token, "/email/change/start", { body: {} }), 400, "invalid_request_body")
    expectProblem(
      await me(ctx, token, "/email/change/start", { body: { new_email: "a@example.com", email: "b@example.com" } }),
      400,
      "invalid_request_body",
    )
    expectProblem(await start(token, user.email), 400, "invalid_request")
    expectProblem(await start(token, user.email.toUpperCase()), 400, "invalid_request")
    const taken = await start(token, other.user.email.toUpperCase())
    expectProblem(taken, 409, "email_already_registered")
    expect(await count(ctx.app, "select count(*) as n from email_challenges where user_id = $1", [user.id])).toBe(0)
    expect(await stored(user.id)).toMatchObject({ email: user.email, security_version: user.security_version })
  })

  it("no resend route; an ID token or no token is refused", async () => {
    const { token, tokens } = await signedInUser(ctx, "no-resend")
    const started = await start(token, uniqueEmail("resend"))
    expect(started.status).toBe(202)
    expectProblem(
      await me(ctx, token, "/email/change/resend", { body: { challenge_id: started.json.challenge_id } }),
      404,
      "not_found",
    )
    expectProblem(
      await me(ctx, undefined, "/email/change/start", { body: { new_email: uniqueEmail("x") } }),
      401,
      "unauthorized",
    )
    expectProblem(
      await me(ctx, tokens.id_token, "/email/change/start", { body: { new_email: uniqueEmail("x") } }),
      401,
      "invalid_token",
    )
  })

  it("verify: a code that is not 6 digits is 400 invalid_request; another stage's or user's challenge is invalid_code", async () => {
    const { user, token } = await signedInUser(ctx, "verify-shape")
    const intruder = await signedInUser(ctx, "intruder")
    const newEmail = uniqueEmail("shape")
    const startedBefore = smtp.messagesTo(user.email).length
    const started = await start(token, newEmail)
    const code = await codeOf(user.email, startedBefore + 1)
    expectProblem(await verifyOld(token, started.json.challenge_id, "12345"), 400, "invalid_request")
    expectProblem(
      await me(ctx, token, "/email/change/verify-old", { body: { challenge_id: started.json.challenge_id } }),
      400,
      "invalid_request_body",
    )
    // the right code, but at the wrong stage or by another user
    expectProblem(await verifyNew(token, started.json.challenge_id, code), 400, "invalid_code")
    expectProblem(await verifyOld(intruder.token, started.json.challenge_id, code), 400, "invalid_code")
    // none of that spent the challenge
    expect((await verifyOld(token, started.json.challenge_id, code)).status).toBe(202)
  })

  it("5 wrong codes kill the challenge; each failure is counted and committed before the error", async () => {
    const { user, token } = await signedInUser(ctx, "five")
    const startedBefore = smtp.messagesTo(user.email).length
    const started = await start(token, uniqueEmail("five"))
    const code = await codeOf(user.email, startedBefore + 1)
    for (let i = 1; i <= 5; i++) {
      const res = await verifyOld(token, started.json.challenge_id, wrong(code))
      expectProblem(res, 400, "invalid_code")
      const row = (
        await query<{ failed_attempts: number; status: string }>(
          ctx.app,
          "select failed_attempts, status from email_challenges where id = $1",
          [started.json.challenge_id],
        )
      )[0]!
      expect(row).toEqual({ failed_attempts: i, status: i === 5 ? "invalidated" : "active" })
    }
    expectProblem(await verifyOld(token, started.json.challenge_id, code), 400, "invalid_code")
    expect(
      await count(
        ctx.app,
        "select count(*) as n from email_challenges where user_id = $1 and purpose = 'email_change_new'",
        [user.id],
      ),
    ).toBe(0)
  })

  it("5 wrong codes at verify-new kill it too: the address is never switched", async () => {
    const { user, token } = await signedInUser(ctx, "five-new")
    const newEmail = uniqueEmail("five-new")
    const stage = await toNewStage(token, user.email, newEmail)
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => verifyNew(token, stage.challenge, wrong(stage.code))),
    )
    for (const res of answers) expectProblem(res, 400, "invalid_code")
    expect(
      (
        await query<{ failed_attempts: number }>(
          ctx.app,
          "select failed_attempts from email_challenges where id = $1",
          [stage.challenge],
        )
      )[0]!.failed_attempts,
    ).toBe(5)
    expectProblem(await verifyNew(token, stage.challenge, stage.code), 400, "invalid_code")
    expect(await stored(user.id)).toMatchObject({ email: user.email, security_version: user.security_version })
    expect(await userEvents(ctx, "user.updated", user.id)).toEqual([])
  })

  it("a new start replaces the previous challenge (one change at a time)", async () => {
    const { user, token } = await signedInUser(ctx, "restart")
    const firstBefore = smtp.messagesTo(user.email).length
    const first = await start(token, uniqueEmail("first"))
    const firstCode = await codeOf(user.email, firstBefore + 1)
    const secondBefore = smtp.messagesTo(user.email).length
    const second = await start(token, uniqueEmail("second"))
    const secondCode = await codeOf(user.email, secondBefore + 1)
    expectProblem(await verifyOld(token, first.json.challenge_id, firstCode), 400, "invalid_code")
    expect((await verifyOld(token, second.json.challenge_id, secondCode)).status).toBe(202)
  })
})

describe("rate limits (the Email OTP send limit per address: 5 per 10 minutes)", () => {
  it("the 6th start for one account, or towards one new address, is 429 rate_limited and issues nothing", async () => {
    const { user, token } = await signedInUser(ctx, "limited")
    for (let i = 0; i < 5; i++) expect((await start(token, uniqueEmail("limited"))).status).toBe(202)
    const sixth = await start(token, uniqueEmail("limited"))
    expectProblem(sixth, 429, "rate_limited")
    expect(Number(sixth.headers["retry-after"])).toBeGreaterThan(0)
    expect(await count(ctx.app, "select count(*) as n from email_challenges where user_id = $1", [user.id])).toBe(5)

    const target = uniqueEmail("bombed")
    for (let i = 0; i < 5; i++)
      expect((await start((await signedInUser(ctx, `bomber-${i}`)).token, target)).status).toBe(202)
    expectProblem(await start((await signedInUser(ctx, "bomber-6")).token, target), 429, "rate_limited")
  })
})

describe("the all-addresses mail ceiling and the user's own address", () => {
  it("strangers' sign-in starts that used up the ceiling of the user's address do not block the change from an address that signed in as it; others stay capped", async () => {
    const returning = await signedInUser(ctx, "returning")
    const other = await signedInUser(ctx, "not-known")
    // This client address (the test's, 127.0.0.1) signed in as the first user with Email OTP before.
    await ctx.app.run(
      rateLimit.remember(
        ctx.b.environment_id,
        KNOWN_ADDRESS,
        emailAddressSubject(returning.user.email_normalized, "127.0.0.1"),
      ),
    )
    // Strangers' sign-in starts have used up the hour's mail ceiling of both addresses.
    const ceiling = loginLimits(ctx.app.config).otpSendPerEmail
    for (const email of [returning.user.email_normalized, other.user.email_normalized]) {
      await ctx.app.run(
        Effect.forEach(Array.from({ length: ceiling.limit }), () =>
          rateLimit.record(ctx.b.environment_id, ceiling, email),
        ),
      )
    }
    const started = await start(returning.token, uniqueEmail("returning-new"))
    expect(started.status, started.text).toBe(202)
    expect(await codeOf(returning.user.email, 1)).toMatch(/^\d{6}$/)
    expectProblem(await start(other.token, uniqueEmail("not-known-new")), 429, "rate_limited")
  })
})

describe("503 user_unavailable", () => {
  it("when the challenge state cannot be read or written: Retry-After, nothing changes", async () => {
    const { user, token } = await signedInUser(ctx, "unavailable")
    const startedBefore = smtp.messagesTo(user.email).length
    const started = await start(token, uniqueEmail("unavailable"))
    const code = await codeOf(user.email, startedBefore + 1)
    await query(ctx.app, "alter table email_challenges rename to email_challenges_away")
    try {
      for (const res of [
        await start(token, uniqueEmail("x")),
        await verifyOld(token, started.json.challenge_id, code),
      ]) {
        expectProblem(res, 503, "user_unavailable")
        expect(res.headers["retry-after"]).toBe("1")
      }
    } finally {
      await query(ctx.app, "alter table email_challenges_away rename to email_challenges")
    }
    // the challenge survived untouched: the retry succeeds
    expect((await verifyOld(token, started.json.challenge_id, code)).status).toBe(202)
  })

  it("verify-new: when the switch cannot be written, 503 with Retry-After; nothing switches and the retry succeeds", async () => {
    const { user, token } = await signedInUser(ctx, "unavailable-switch")
    const newEmail = uniqueEmail("unavailable-switch")
    const stage = await toNewStage(token, user.email, newEmail)
    // Injected failure inside the switch's transaction: the outbox cannot take user.updated.
    const res = await withTableAway(ctx, "event_outbox", () => verifyNew(token, stage.challenge, stage.code))
    expectProblem(res, 503, "user_unavailable")
    expect(res.headers["retry-after"]).toBe("1")
    expect(await stored(user.id)).toEqual({
      email: user.email,
      email_verified: true,
      security_version: user.security_version,
    })
    expect(await userEvents(ctx, "user.updated", user.id)).toEqual([])
    expect((await verifyNew(token, stage.challenge, stage.code)).json).toEqual({
      email: newEmail,
      email_verified: true,
    })
  })
})

describe("5-minute challenges (TestClock)", () => {
  it("a code is accepted just before 5 minutes and refused after; nothing switches", async () => {
    const early = await signedInUser(ctx, "in-time")
    const startedBefore = smtp.messagesTo(early.user.email).length
    const started = await start(early.token, uniqueEmail("in-time"))
    const code = await codeOf(early.user.email, startedBefore + 1)
    await ctx.app.advance("4 minutes")
    await ctx.app.advance("59 seconds")
    expect((await verifyOld(early.token, started.json.challenge_id, code)).status).toBe(202)

    const late = await signedInUser(ctx, "too-late")
    const lateStartBefore = smtp.messagesTo(late.user.email).length
    const lateStart = await start(late.token, uniqueEmail("too-late"))
    const lateCode = await codeOf(late.user.email, lateStartBefore + 1)
    await ctx.app.advance("5 minutes")
    // the access token lives 300 s too: a new sign-in, same user, same challenge
    const again = await signIn(ctx, late.user)
    const res = await verifyOld(again.tokens.access_token, lateStart.json.challenge_id, lateCode)
    expectProblem(res, 400, "invalid_code")
    expect(res.json.detail).toContain("expired")
    expect(
      await count(
        ctx.app,
        "select count(*) as n from email_challenges where user_id = $1 and purpose = 'email_change_new'",
        [late.user.id],
      ),
    ).toBe(0)
  })
})

describe("409 email_already_registered, checked again at each step", () => {
  it("an address taken after start: verify-old is 409 and spends the challenge", async () => {
    const { user, token } = await signedInUser(ctx, "taken-old")
    const newEmail = uniqueEmail("taken-old")
    const startedBefore = smtp.messagesTo(user.email).length
    const started = await start(token, newEmail)
    const code = await codeOf(user.email, startedBefore + 1)
    await createUser(ctx.app, ctx.b, newEmail)
    expectProblem(await verifyOld(token, started.json.challenge_id, code), 409, "email_already_registered")
    expect(smtp.messagesTo(newEmail)).toHaveLength(0)
    expectProblem(await verifyOld(token, started.json.challenge_id, code), 400, "invalid_code")
  })

  it("an address taken after verify-old: verify-new is 409; nothing switches", async () => {
    const { user, token } = await signedInUser(ctx, "taken-new")
    const newEmail = uniqueEmail("taken-new")
    const stage = await toNewStage(token, user.email, newEmail)
    await createUser(ctx.app, ctx.b, newEmail.toUpperCase())
    expectProblem(await verifyNew(token, stage.challenge, stage.code), 409, "email_already_registered")
    expect(await stored(user.id)).toMatchObject({ email: user.email, security_version: user.security_version })
    expect((await me(ctx, token, "")).status).toBe(200)
  })

  it("race: two accounts switching to one address at once, exactly one wins", async () => {
    const a = await signedInUser(ctx, "race-a")
    const b = await signedInUser(ctx, "race-b")
    const target = uniqueEmail("race-target")
    const stageA = await toNewStage(a.token, a.user.email, target)
    const stageB = await toNewStage(b.token, b.user.email, target)
    const answers = await Promise.all([
      verifyNew(a.token, stageA.challenge, stageA.code),
      verifyNew(b.token, stageB.challenge, stageB.code),
    ])
    expect(answers.map((r) => r.status).sort()).toEqual([200, 409])
    const loser = answers.find((r) => r.status === 409)!
    expectProblem(loser, 409, "email_already_registered")
    expect(
      await count(ctx.app, "select count(*) as n from users where environment_id = $1 and email_normalized = $2", [
        ctx.b.environment_id,
        target,
      ]),
    ).toBe(1)
    const winner = answers[0]!.status === 200 ? a : b
    const other = winner === a ? b : a
    expect((await stored(winner.user.id)).email).toBe(target)
    expect(await stored(other.user.id)).toMatchObject({
      email: other.user.email,
      security_version: other.user.security_version,
    })
    expect(await userEvents(ctx, "user.updated", winner.user.id)).toHaveLength(1)
    expect(await userEvents(ctx, "user.updated", other.user.id)).toEqual([])
  })

  it("an account created with the address while the switch runs (a first login takes no lock): the unique index answers 409", async () => {
    const { user, token } = await signedInUser(ctx, "backstop")
    const target = uniqueEmail("backstop")
    const stage = await toNewStage(token, user.email, target)
    // Another connection inserts the address and keeps its transaction open: the switch does
    // not see the row, its UPDATE waits on the unique index, and fails once that commits.
    const other = new pg.Client({ connectionString: ctx.app.databaseUrl })
    await other.connect()
    try {
      await other.query("begin")
      await other.query(
        `insert into users (id, workspace_id, environment_id, email, email_normalized, user_handle, created_at, updated_at)
        values ($1, $2, $3, $4, $4, $5, now(), now())`,
        [randomId("usr"), ctx.b.workspace_id, ctx.b.environment_id, target, randomId("h")],
      )
      const pending = verifyNew(token, stage.challenge, stage.code)
      // Wait until the switch is blocked on that row (a lock wait, not a timer on the clock).
      for (let i = 0; i < 400; i++) {
        const waiting = await other.query(`select count(*)::int as n from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()`)
        if (waiting.rows[0].n > 0) break
        await new Promise((r) => setTimeout(r, 25))
      }
      await other.query("commit")
      expectProblem(await pending, 409, "email_already_registered")
    } finally {
      await other.end()
    }
    expect(await stored(user.id)).toMatchObject({ email: user.email, security_version: user.security_version })
    expect(await userEvents(ctx, "user.updated", user.id)).toEqual([])
    expect((await me(ctx, token, "")).status).toBe(200)
  })
})
