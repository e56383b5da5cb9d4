import { Effect, Logger } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { recipientHash } from "../../src/bounces/recipient.js"
import { makeCrypto } from "../../src/platform/crypto.js"
import { purgeDeletedUsers } from "../../src/users/purge/service.js"
import { crontab, tasks } from "../../src/jobs/tasks.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { createClient as createLoginClient, createTransaction, publicApi } from "../login/support.js"
import { seedIdentity, seedPasskey } from "../management/support/seed.js"
import { createClient, createUser, exchangeCode, mintCode, queryRows, type TestUser } from "../oidc/support.js"

// Spec: DELETE moves a user to pending_deletion; docs/decisions/billing-bounces-retention.md: purged after a retention period
// (USER_DELETION_RETENTION_DAYS, default 30), by a worker task, tested with TestClock.

let app: TestApp
let env: Bootstrapped

beforeAll(async () => {
  app = await startApp()
  env = await app.bootstrap()
})
afterAll(async () => {
  await app?.close()
})

const count = async (text: string, params: ReadonlyArray<unknown>) =>
  (await queryRows<{ n: number }>(app, `select count(*)::int as n from (${text}) q`, params))[0]!.n

/** Everything a purge must remove or keep, counted for one user. */
const footprint = async (user: TestUser) => ({
  users: await count("select 1 from users where id = $1", [user.id]),
  identities: await count("select 1 from identities where user_id = $1", [user.id]),
  passkeys: await count("select 1 from passkeys where user_id = $1", [user.id]),
  sessions: await count("select 1 from login_sessions where user_id = $1", [user.id]),
  families: await count("select 1 from refresh_families where user_id = $1", [user.id]),
  refreshTokens: await count(
    "select 1 from refresh_tokens t join refresh_families f on f.id = t.family_id where f.user_id = $1",
    [user.id],
  ),
  codes: await count("select 1 from authorization_codes where user_id = $1", [user.id]),
  challenges: await count("select 1 from email_challenges where email_normalized = $1 or user_id = $2", [
    user.email,
    user.id,
  ]),
  transactions: await count("select 1 from auth_transactions where user_id = $1", [user.id]),
  auditRecords: await count("select 1 from audit_events where subject_id = $1", [user.id]),
  personalAudit: await count(
    `select 1 from audit_events where (details ? 'masked_email' or details ? 'note')
    and (subject_id = $1 or actor_id = $1 or details->>'user_id' = $1)`,
    [user.id],
  ),
  mau: await count("select 1 from mau_users where user_id = $1", [user.id]),
  mailTraces: await count(
    `select 1 from mail_deliveries where recipient_hash = any($1) union all
    select 1 from email_suppressions where recipient_hash = any($1)`,
    [[await hashOf(user.email), legacyHashOf(user.email)]],
  ),
})
const hashOf = (email: string) => app.run(recipientHash(env.workspace_id, email))
/** The hash rows made before the HMAC data key carry (keyed by MASTER_KEY itself): found and deleted too. */
const legacyHashOf = (email: string) =>
  makeCrypto({ current: app.config.masterKey! })
    .hmac(`email-recipient/${env.workspace_id}`, email.trim().toLowerCase())
    .toString("base64url")

/** A user with a bit of everything: an OTP challenge, a session with a refresh family, an identity, a passkey, a blocked-with-note history. */
const richUser = async () => {
  const user = await createUser(app, env)
  const loginClient = await createLoginClient(app, env)
  const txn = await createTransaction(app, env, loginClient)
  expect(
    (await publicApi(app, env, `/auth/transactions/${txn}/email/start`, { body: { email: user.email } })).status,
  ).toBe(202)
  const spa = await createClient(app, env)
  const minted = await mintCode(app, env, spa, user)
  expect((await exchangeCode(app, env, spa, minted)).status).toBe(200)
  await seedIdentity(app, { workspaceId: env.workspace_id, environmentId: env.environment_id, userId: user.id })
  await seedPasskey(app, { workspaceId: env.workspace_id, environmentId: env.environment_id, userId: user.id })
  const q = `?environment_id=${env.environment_id}`
  expect(
    (
      await app.management(`/v1/users/${user.id}/block${q}`, {
        method: "POST",
        body: { reason: `fraud by ${user.email}` },
      })
    ).status,
  ).toBe(200)
  expect((await app.management(`/v1/users/${user.id}/unblock${q}`, { method: "POST", body: {} })).status).toBe(200)
  // a mail that hard-bounced (src/bounces), as the mail job and the bounce intake record them
  const dlv = `dlv_${user.id.slice(4)}`
  await queryRows(
    app,
    `insert into mail_deliveries (id, workspace_id, environment_id, message_id, recipient_hash, purpose, sent_at)
    values ($1, $2, $3, $4, $5, 'login_code', $6)`,
    [dlv, env.workspace_id, env.environment_id, `<${dlv}@localhost>`, await hashOf(user.email), new Date(app.now())],
  )
  await queryRows(
    app,
    `insert into email_suppressions (environment_id, recipient_hash, delivery_id, created_at) values ($1, $2, $3, $4)`,
    [env.environment_id, await hashOf(user.email), dlv, new Date(app.now())],
  )
  // and an older delivery, recorded before the HMAC data key existed
  await queryRows(
    app,
    `insert into mail_deliveries (id, workspace_id, environment_id, message_id, recipient_hash, purpose, sent_at)
    values ($1, $2, $3, $4, $5, 'login_code', $6)`,
    [
      `${dlv}_old`,
      env.workspace_id,
      env.environment_id,
      `<old${dlv}@localhost>`,
      legacyHashOf(user.email),
      new Date(app.now()),
    ],
  )
  return user
}
const remove = async (user: TestUser) =>
  expect(
    (await app.management(`/v1/users/${user.id}?environment_id=${env.environment_id}`, { method: "DELETE" })).status,
  ).toBe(200)
const purge = (options: Parameters<typeof purgeDeletedUsers>[0] = {}) => app.run(purgeDeletedUsers(options))

describe("purge of users pending deletion (worker task)", () => {
  it("30 days after DELETE (not a second before): user, credentials, sessions, grants and challenges gone; audit kept, redacted", async () => {
    const user = await richUser()
    const keeper = await richUser() // another user of the Environment, never deleted
    await remove(user)
    const before = await footprint(user)
    expect(before).toMatchObject({
      users: 1,
      identities: 1,
      passkeys: 1,
      sessions: 1,
      families: 1,
      refreshTokens: 1,
      codes: 1,
      challenges: 1,
      mailTraces: 3,
    })
    expect(before.personalAudit).toBeGreaterThan(0)
    const keeperBefore = await footprint(keeper)

    await app.advance("30 days")
    await app.advance("-1 second")
    expect((await purge()).userIds).toEqual([])
    expect(await footprint(user)).toEqual(before)

    await app.advance("1 second")
    const report = await purge()
    expect(report.userIds).toEqual([user.id])
    expect(report.auditRecordsRedacted).toBeGreaterThan(0)
    const after = await footprint(user)
    expect(after).toEqual({
      users: 0,
      identities: 0,
      passkeys: 0,
      sessions: 0,
      families: 0,
      refreshTokens: 0,
      codes: 0,
      challenges: 0,
      transactions: 0,
      auditRecords: before.auditRecords + 1,
      personalAudit: 0,
      mau: before.mau,
      mailTraces: 0,
    })
    const [purged] = await queryRows<{ actor_type: string; details: Record<string, unknown> }>(
      app,
      "select actor_type, details from audit_events where action = 'user.purged' and subject_id = $1",
      [user.id],
    )
    expect(purged).toMatchObject({ actor_type: "system", details: { older_than_days: 30 } })
    const redacted = await queryRows<{ details: Record<string, unknown> }>(
      app,
      "select details from audit_events where subject_id = $1 and action = 'user.blocked'",
      [user.id],
    )
    expect(redacted[0]!.details).toEqual({ revoked_sessions: 1, personal_data_redacted: true })
    expect(
      JSON.stringify(
        await queryRows(app, "select * from audit_events where environment_id = $1", [env.environment_id]),
      ),
    ).not.toContain(user.email)
    // the other user is untouched
    expect(await footprint(keeper)).toEqual(keeperBefore)
    // the Management API no longer knows the user; the address is free again
    expect((await app.management(`/v1/users/${user.id}?environment_id=${env.environment_id}`)).status).toBe(404)
    const again = await app.management(`/v1/users?environment_id=${env.environment_id}`, {
      method: "POST",
      body: { email: user.email },
    })
    expect(again.status).toBe(201)
    // a second run has nothing to do
    expect((await purge()).userIds).toEqual([])
  })

  it("active and blocked users are never purged, however old", async () => {
    const active = await createUser(app, env)
    const blocked = await createUser(app, env)
    expect(
      (
        await app.management(`/v1/users/${blocked.id}/block?environment_id=${env.environment_id}`, {
          method: "POST",
          body: {},
        })
      ).status,
    ).toBe(200)
    await app.advance("400 days")
    const report = await purge({ olderThanMs: 0 })
    expect(report.userIds).not.toContain(active.id)
    expect(report.userIds).not.toContain(blocked.id)
    expect(await count("select 1 from users where id = any($1)", [[active.id, blocked.id]])).toBe(2)
  })

  it("the audit table stays append-only outside the purge's narrow redaction", async () => {
    const user = await richUser()
    const [row] = await queryRows<{ id: string }>(
      app,
      "select id from audit_events where subject_id = $1 and action = 'user.blocked'",
      [user.id],
    )
    const tries = [
      "update audit_events set details = (details - array['masked_email', 'note', 'reason']) || '{\"personal_data_redacted\": true}'::jsonb where id = $1",
      "delete from audit_events where id = $1",
    ]
    for (const text of tries) await expect(queryRows(app, text, [row!.id])).rejects.toThrow()
    // even with the switch on, only the listed keys may go, and nothing else may change
    const inTx = (statement: string) =>
      queryRows(app, `with s as (select set_config('authservice.audit_redaction', 'on', true)) ${statement}`, [row!.id])
    await expect(
      inTx("update audit_events set action = 'x' where id = $1 and exists (select 1 from s)"),
    ).rejects.toThrow()
    await expect(
      inTx("update audit_events set details = '{}'::jsonb where id = $1 and exists (select 1 from s)"),
    ).rejects.toThrow()
    // the switch on, a well-formed redaction passes (proves the switch was on in the refused tries)
    await inTx(`update audit_events set details = (details - array['masked_email', 'note', 'reason']) || '{"personal_data_redacted": true}'::jsonb
      where id = $1 and exists (select 1 from s)`)
    const [after] = await queryRows<{ details: Record<string, unknown> }>(
      app,
      "select details from audit_events where id = $1",
      [row!.id],
    )
    expect(after!.details).toEqual({ revoked_sessions: 1, personal_data_redacted: true })
  })

  it("every foreign key to users (and to the rows the purge deletes) is one the purge handles: a new one fails here first", async () => {
    // Tables the purge deletes from (src/users/purge/repo.ts deleteUserData), and the users table.
    const purged = [
      "users",
      "refresh_families",
      "authorization_codes",
      "webauthn_challenges",
      "email_challenges",
      "auth_transactions",
      "login_sessions",
      "identities",
      "passkeys",
      "user_export_jobs",
      "impersonation_sessions",
      "mail_deliveries",
    ]
    const fks = await queryRows<{ fk: string }>(
      app,
      `select c.conrelid::regclass::text || '.' || a.attname || ' -> ' || c.confrelid::regclass::text
        || case c.confdeltype when 'c' then ' (cascade)' when 'n' then ' (set null)' else '' end as fk
      from pg_constraint c join pg_attribute a on a.attrelid = c.conrelid and a.attnum = any(c.conkey)
      where c.contype = 'f' and c.confrelid::regclass::text = any($1)`,
      [purged],
    )
    // If this list changes, make deleteUserData delete the new rows (children first) or let them
    // cascade, then update the list: otherwise the purge of such a user fails (it is skipped and logged).
    expect(fks.map((r) => r.fk).sort()).toEqual([
      "auth_transactions.user_id -> users",
      "authorization_codes.session_id -> login_sessions",
      "authorization_codes.user_id -> users",
      "email_challenges.transaction_id -> auth_transactions",
      "email_challenges.user_id -> users",
      "hosted_login_sessions.user_id -> users (cascade)",
      "identities.user_id -> users",
      "impersonation_sessions.target_user_id -> users",
      "login_sessions.user_id -> users",
      "mail_bounces.delivery_id -> mail_deliveries (cascade)",
      "passkeys.user_id -> users",
      "refresh_families.session_id -> login_sessions",
      "refresh_families.user_id -> users",
      "refresh_tokens.family_id -> refresh_families (cascade)",
      "social_pending_links.transaction_id -> auth_transactions (cascade)",
      "social_pending_links.user_id -> users (cascade)",
      "social_states.transaction_id -> auth_transactions (cascade)",
      "social_states.user_id -> users (cascade)",
      "user_export_chunks.job_id -> user_export_jobs (cascade)",
      "user_export_jobs.target_user_id -> users",
      "webauthn_challenges.user_id -> users",
    ])
  })

  it("a user whose data cannot be deleted is skipped and logged; the users behind it are purged all the same", async () => {
    const [stuck, next] = [await createUser(app, env), await createUser(app, env)]
    await remove(stuck)
    await app.advance("1 second")
    await remove(next) // deleted later: the stuck user heads every batch
    // a row the purge does not know refers to the first user (as a table added without a purge step would)
    await queryRows(app, "create table purge_test_blocker (user_id text not null references users(id))")
    await queryRows(app, "insert into purge_test_blocker values ($1)", [stuck.id])
    await app.advance("31 days")
    const logged: Array<string> = []
    const capture = Logger.make((o) => {
      logged.push(`${o.logLevel} ${JSON.stringify(o.message)}`)
    })
    const report = await app.run(purgeDeletedUsers().pipe(Effect.provide(Logger.layer([capture]))))
    expect(report.failedUserIds).toEqual([stuck.id])
    expect(logged.filter((l) => l.includes("could not be purged") && l.includes(stuck.id))).toEqual([
      expect.stringMatching(/^Error .*purge_test_blocker_user_id_fkey/),
    ])
    expect(report.userIds).toContain(next.id)
    expect(report.userIds).not.toContain(stuck.id)
    expect(await count("select 1 from users where id = $1 and status = 'pending_deletion'", [stuck.id])).toBe(1)
    expect(await count("select 1 from users where id = $1", [next.id])).toBe(0)
    // the stuck user's part was rolled back whole: no purge record, audit untouched
    expect(await count("select 1 from audit_events where action = 'user.purged' and subject_id = $1", [stuck.id])).toBe(
      0,
    )
    // once the row is gone, the next run purges it
    await queryRows(app, "drop table purge_test_blocker")
    const again = await purge()
    expect(again).toMatchObject({ userIds: [stuck.id], failedUserIds: [] })
  })

  it("two concurrent purges take each user once", async () => {
    const users = await Promise.all(Array.from({ length: 6 }, () => createUser(app, env)))
    for (const u of users) await remove(u)
    await app.advance("31 days")
    // one run as the worker runs it (the cron task), one as the CLI does
    const before = await count("select 1 from users where status = 'pending_deletion'", [])
    const [, b] = await Promise.all([
      app.run(tasks["users_purge_deleted"]!(null)),
      purge({ olderThanMs: 30 * 86_400_000 }),
    ])
    expect(crontab).toContain("users_purge_deleted")
    expect(await count("select 1 from users where id = any($1)", [users.map((u) => u.id)])).toBe(0)
    expect(b.userIds.every((id) => users.some((u) => u.id === id))).toBe(true)
    expect(await count("select 1 from users where status = 'pending_deletion'", [])).toBe(before - users.length)
    expect(
      await count("select 1 from audit_events where action = 'user.purged' and subject_id = any($1)", [
        users.map((u) => u.id),
      ]),
    ).toBe(6)
  })
})
