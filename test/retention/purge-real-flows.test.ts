import { readFileSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "vitest"
import { housekeeping } from "../../src/jobs/housekeeping.js"
import { tasks } from "../../src/jobs/tasks.js"
import { sendLoginCode } from "../../src/login/email-otp/mail-job.js"
import { maskEmail } from "../../src/platform/events/schema.js"
import { Mailer } from "../../src/platform/mailer.js"
import { splitStatements } from "../../src/platform/sql-split.js"
import { purgeDeletedUsers } from "../../src/users/purge/service.js"
import { completeAndExchange, publicApi, startTransaction } from "../passkeys/support/flow.js"
import { createUser, me, query, randomId, signIn, useMeApp } from "../me/support.js"

// The purge of users pending deletion after what real users do (docs/decisions/billing-bounces-retention.md, after review): an email
// change through /me (its challenges keep the user's id but name another address) and a first
// sign-in by Email OTP (audit records written before the user existed). No worker: mail jobs
// stay queued and are run here, into the development mailer, and the purge is the worker's
// task run directly, so nothing runs behind the TestClock's back.

const ctx = useMeApp()

/**
 * An address whose masked form (`x***@y***.test`) is unique in this file's database: the
 * checks below look for the masked address in every audit record of the Environment.
 */
let letters = 0
const distinctEmail = () => {
  const a = "abcdefghijklmnopqrstuvwxyz"[letters % 26]!
  const d = "zyxwvutsrqponmlkjihgfedcba"[Math.floor(letters++ / 26) % 26]!
  return `${a}${randomId("x").slice(2, 10)}@${d}${randomId("x").slice(2, 8)}.test`
}

/** Runs the queued mail job of a challenge (the worker's task) and returns the code it mailed. */
const mailedCode = async (challengeId: string) => {
  const [job] = await query<{ payload: unknown }>(
    ctx.app,
    `select j.payload from graphile_worker._private_jobs j
    join graphile_worker._private_tasks t on t.id = j.task_id
    where t.identifier = 'send_login_code' and j.payload->>'challenge_id' = $1`,
    [challengeId],
  )
  expect(job, `mail job of ${challengeId}`).toBeDefined()
  await ctx.app.run(sendLoginCode(job!.payload))
  const sent = await ctx.app.run(Mailer.use((m) => Effect.succeed(m.sent())))
  return /code is (\d{6})/.exec(sent.at(-1)!.text)![1]!
}

const meCall = (token: string, path: string, body: unknown) => me(ctx, token, path, { body })
const startChange = async (token: string, newEmail: string) => {
  const res = await meCall(token, "/email/change/start", { new_email: newEmail })
  expect(res.status, res.text).toBe(202)
  return res.json.challenge_id as string
}
const verifyOld = async (token: string, challengeId: string) => {
  const res = await meCall(token, "/email/change/verify-old", {
    challenge_id: challengeId,
    code: await mailedCode(challengeId),
  })
  expect(res.status, res.text).toBe(202)
  return res.json.challenge_id as string
}
const verifyNew = async (token: string, challengeId: string) => {
  const res = await meCall(token, "/email/change/verify-new", {
    challenge_id: challengeId,
    code: await mailedCode(challengeId),
  })
  expect(res.status, res.text).toBe(200)
}
const managementDelete = async (userId: string) => {
  const res = await ctx.app.management(`/v1/users/${userId}?environment_id=${ctx.b.environment_id}`, {
    method: "DELETE",
  })
  expect(res.status, res.text).toBe(200)
}
const count = async (text: string, params: ReadonlyArray<unknown>) =>
  (await query<{ n: number }>(ctx.app, `select count(*)::int as n from (${text}) q`, params))[0]!.n
const runPurgeTask = () => ctx.app.run(tasks["users_purge_deleted"]!(null))
const auditText = async () =>
  JSON.stringify(await query(ctx.app, "select * from audit_events where environment_id = $1", [ctx.b.environment_id]))

describe("purge after real email changes", () => {
  it("users who started, half-did or completed an email change are purged by the worker task, with the others of their batch", async () => {
    // started and proved the old address: an email_change_new challenge names the new address
    const halfway = await createUser(ctx.app, ctx.b, distinctEmail())
    const halfwayToken = (await signIn(ctx, halfway)).tokens.access_token
    const halfwayNew = distinctEmail()
    await verifyOld(halfwayToken, await startChange(halfwayToken, halfwayNew))
    // completed: the email_change_old challenge names the address the user no longer has
    const changed = await createUser(ctx.app, ctx.b, distinctEmail())
    const changedToken = (await signIn(ctx, changed)).tokens.access_token
    const changedNew = distinctEmail()
    await verifyNew(changedToken, await verifyOld(changedToken, await startChange(changedToken, changedNew)))
    expect(
      (await query<{ email: string }>(ctx.app, "select email from users where id = $1", [changed.id]))[0]!.email,
    ).toBe(changedNew)
    // only started
    const started = await createUser(ctx.app, ctx.b, distinctEmail())
    const startedToken = (await signIn(ctx, started)).tokens.access_token
    await startChange(startedToken, distinctEmail())
    const plain = await createUser(ctx.app, ctx.b, distinctEmail())
    const keeper = await createUser(ctx.app, ctx.b, distinctEmail())
    const ids = [halfway.id, changed.id, started.id, plain.id]
    expect(await count("select 1 from email_challenges where user_id = any($1)", [ids])).toBe(5)

    // DELETE /me (a fresh session) for one, the Management API for the others
    expect((await me(ctx, halfwayToken, "", { method: "DELETE" })).status).toBe(200)
    for (const id of [changed.id, started.id, plain.id]) await managementDelete(id)
    await ctx.app.advance("30 days")
    await ctx.app.advance("1 second")
    await runPurgeTask()

    expect(await count("select 1 from users where id = any($1)", [ids])).toBe(0)
    expect(await count("select 1 from email_challenges where user_id = any($1)", [ids])).toBe(0)
    expect(await count("select 1 from audit_events where action = 'user.purged' and subject_id = any($1)", [ids])).toBe(
      4,
    )
    expect(await count("select 1 from users where id = $1", [keeper.id])).toBe(1)
    // the masked addresses of the changes (masked_old_email, masked_new_email) are redacted too
    const audit = await auditText()
    for (const address of [halfway.email, halfwayNew, changed.email, changedNew])
      expect(audit).not.toContain(maskEmail(address))
    expect(
      await count("select 1 from audit_events where subject_id = $1 and action = 'user.email_changed'", [changed.id]),
    ).toBe(1)
    expect((await ctx.app.run(purgeDeletedUsers())).userIds).toEqual([])
  })

  it("housekeeping deletes email change challenges a day after their code expired, and keeps younger ones", async () => {
    const user = await createUser(ctx.app, ctx.b, distinctEmail())
    const token = (await signIn(ctx, user)).tokens.access_token
    const old = await startChange(token, distinctEmail())
    await ctx.app.advance("1 day")
    const later = (await signIn(ctx, user)).tokens.access_token
    const young = await startChange(later, distinctEmail()) // supersedes the first
    await ctx.app.advance("5 minutes")
    await ctx.app.run(housekeeping)
    expect(await count("select 1 from email_challenges where id = $1", [old])).toBe(1) // expired 1 day ago, not more
    await ctx.app.advance("1 second")
    await ctx.app.run(housekeeping)
    const left = await query<{ id: string }>(ctx.app, "select id from email_challenges where user_id = $1", [user.id])
    expect(left.map((r) => r.id)).toEqual([young])
  })
})

describe("audit records written before the user existed", () => {
  it("a first sign-in by Email OTP (a wrong code, then the right one): after the purge no audit record holds the masked address; the records remain", async () => {
    const email = distinctEmail()
    const txn = await startTransaction(ctx.app, ctx.b, ctx.client)
    const started = await publicApi(ctx.app, ctx.b, `/auth/transactions/${txn.id}/email/start`, { body: { email } })
    expect(started.status, started.text).toBe(202)
    const challenge = started.json.challenge_id as string
    const code = await mailedCode(challenge)
    const wrong = await publicApi(ctx.app, ctx.b, `/auth/transactions/${txn.id}/email/verify`, {
      body: { challenge_id: challenge, code: code === "000000" ? "111111" : "000000" },
    })
    expect(wrong.status, wrong.text).toBe(400)
    const right = await publicApi(ctx.app, ctx.b, `/auth/transactions/${txn.id}/email/verify`, {
      body: { challenge_id: challenge, code },
    })
    expect(right.status, right.text).toBe(200)
    const { tokens, access } = await completeAndExchange(ctx.app, ctx.b, ctx.client, txn)
    const userId = access["sub"] as string
    // written while no user had the address: no user id on them, and no masked address either
    const before = await query<{
      id: string
      action: string
      actor_id: string | null
      details: Record<string, unknown>
    }>(
      ctx.app,
      "select id, action, actor_id, details from audit_events where subject_id = $1 and action in ('login.email_otp_sent', 'login.failed') order by action",
      [txn.id],
    )
    expect(before.map((r) => [r.action, r.actor_id])).toEqual([
      ["login.email_otp_sent", null],
      ["login.failed", null],
    ])
    for (const row of before) {
      expect(row.details).not.toHaveProperty("masked_email")
      expect(row.details).toMatchObject({ challenge_id: challenge })
    }
    expect(await auditText()).not.toContain(maskEmail(email))

    expect((await me(ctx, tokens.access_token, "", { method: "DELETE" })).status).toBe(200)
    await ctx.app.advance("30 days")
    await ctx.app.advance("1 second")
    await ctx.app.run(housekeeping) // the login transaction and its challenge are long gone by now
    expect(await count("select 1 from email_challenges where id = $1", [challenge])).toBe(0)
    await runPurgeTask()
    expect(await count("select 1 from users where id = $1", [userId])).toBe(0)
    const after = await query<{ id: string }>(ctx.app, "select id from audit_events where id = any($1)", [
      before.map((r) => r.id),
    ])
    expect(after).toHaveLength(2)
    expect(await auditText()).not.toContain(maskEmail(email))
  })

  it("records written before this change lose their masked address (sql/0161); records with a user keep it until the purge", async () => {
    const insert = (actorId: string | null, details: Record<string, unknown>) =>
      query<{ id: string }>(
        ctx.app,
        `insert into audit_events
        (id, workspace_id, environment_id, actor_type, actor_id, action, subject_type, subject_id, result, details, created_at)
      values ($1, $2, $3, 'end_user', $4, 'login.email_otp_sent', 'auth_transaction', $5, 'success', $6::jsonb, $7) returning id`,
        [
          randomId("aud"),
          ctx.b.workspace_id,
          ctx.b.environment_id,
          actorId,
          randomId("txn"),
          JSON.stringify(details),
          new Date(ctx.app.now()),
        ],
      )
    const user = await createUser(ctx.app, ctx.b, distinctEmail())
    const [anonymous] = await insert(null, {
      challenge_id: "chl_legacy",
      masked_email: "q***@w***.test",
      delivered: true,
    })
    const [known] = await insert(user.id, {
      challenge_id: "chl_known",
      masked_email: maskEmail(user.email),
      delivered: true,
    })
    const migration = readFileSync(
      join(import.meta.dirname, "../../sql/0161_audit_anonymous_masked_emails.sql"),
      "utf8",
    )
    await ctx.app.run(
      SqlClient.SqlClient.use((sql) =>
        sql.withTransaction(
          Effect.forEach(splitStatements(migration), (statement) => sql.unsafe(statement), { discard: true }),
        ),
      ),
    )
    const details = async (id: string) =>
      (await query<{ details: unknown }>(ctx.app, "select details from audit_events where id = $1", [id]))[0]!.details
    expect(await details(anonymous!.id)).toEqual({
      challenge_id: "chl_legacy",
      delivered: true,
      personal_data_redacted: true,
    })
    expect(await details(known!.id)).toEqual({
      challenge_id: "chl_known",
      masked_email: maskEmail(user.email),
      delivered: true,
    })
  })
})
