import { randomBytes } from "node:crypto"
import { Effect, Layer } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { usableConnection } from "../../src/management/connections/repo.js"
import { openProviderClientSecret } from "../../src/management/connections/secret.js"
import { sealContext as loginCodeMailContext } from "../../src/login/email-otp/mail-job.js"
import { graceSealContext } from "../../src/oidc/refresh/service.js"
import {
  enqueueEmailChangeNotice,
  sealContext as emailChangeNoticeContext,
} from "../../src/me/email-change/notice-job.js"
import { DELIVERY_ID_HEADER, trackDelivery } from "../../src/bounces/deliveries.js"
import { recordBounce } from "../../src/bounces/service.js"
import { isAddressSuppressed } from "../../src/bounces/suppression.js"
import { emailAddressSubject, KNOWN_ADDRESS } from "../../src/rate-limit/limits.js"
import * as rateLimit from "../../src/rate-limit/service.js"
import { Crypto, CryptoFromKeyring, keyId, makeCrypto } from "../../src/platform/crypto.js"
import {
  ProcessHeartbeat,
  ProcessHeartbeatLive,
  type ProcessRegistration,
} from "../../src/platform/process-heartbeat.js"
import { freePort } from "../../src/platform/free-port.js"
import { verifyMasterKey } from "../../src/platform/master-key.js"
import * as rotationRepo from "../../src/operator/master-key/repo.js"
import { rotateMasterKey } from "../../src/operator/master-key/service.js"
import { SEALED_VALUES } from "../../src/operator/master-key/sealed-values.js"
import { verifyWebhook } from "../../src/webhooks/verifier.js"
import { type TestApp, startApp } from "../support/app.js"
import { runCliJson, runEntry } from "../support/processes.js"
import { until } from "../faults/support.js"
import { createClient as createLoginClient, createTransaction, publicApi, uniqueEmail } from "../login/support.js"
import { createClient, createUser, exchangeCode, mintCode, refresh, verifyJwt } from "../oidc/support.js"
import { createWebhook, type Receiver, sqlRows, startReceiver, WEBHOOK_TEST_ENV } from "../webhooks/support.js"

const A = randomBytes(32).toString("base64url")
const B = randomBytes(32).toString("base64url")
const keyA = Buffer.from(A, "base64url")
const keyB = Buffer.from(B, "base64url")

let app: TestApp | undefined
let receiver: Receiver | undefined
afterAll(async () => {
  await app?.close()
  await receiver?.close()
})

/** Stops the running app (if any) and starts it again on `databaseUrl` (a fresh database when undefined). */
const restart = async (databaseUrl: string | undefined, env: Record<string, string>) => {
  await app?.close()
  app = undefined
  app = await startApp({ ...(databaseUrl === undefined ? {} : { databaseUrl }), env: { ...WEBHOOK_TEST_ENV, ...env } })
  return app
}

/** Every sealed value in the database, with the key id it names. */
const sealedKeyIds = async (a: TestApp) => {
  const rows = await sqlRows<{ k: string }>(
    a,
    `
    select split_part(private_key_sealed, '.', 2) as k from signing_keys
    union all select split_part(key_sealed, '.', 2) from hmac_data_keys
    union all select split_part(secret_sealed, '.', 2) from webhooks where secret_sealed is not null
    union all select split_part(provider_client_secret_sealed, '.', 2) from connections where provider_client_secret_sealed is not null
    union all select split_part(response_sealed, '.', 2) from idempotency_keys where response_sealed is not null
    union all select split_part(grace_response_sealed, '.', 2) from refresh_families where grace_response_sealed is not null
    union all select split_part(j.payload->>'sealed', '.', 2) from graphile_worker._private_jobs j where j.payload->>'sealed' is not null`,
  )
  return rows.map((r) => r.k)
}

/** The key id the app's Crypto seals under right now. */
const sealingKeyId = Effect.gen(function* () {
  return (yield* Crypto).sealingKeyId()
})

const CONNECTION_SECRET = "provider-secret-rotated-0123456789"

describe("master-key rotation that completes", () => {
  it("data sealed under A; restart with B (previous A); `cli master-key rotate`; restart with B only: everything still works", async () => {
    receiver = await startReceiver()
    // --- Key A: seal one of everything. ---------------------------------------------------------
    const first = await restart(undefined, { MASTER_KEY: A })
    const databaseUrl = first.databaseUrl
    const env = await first.bootstrap()
    const client = await createClient(first, env, { type: "web_bff" })
    const user = await createUser(first, env)
    const exchanged = await exchangeCode(first, env, client, await mintCode(first, env, client, user))
    expect(exchanged.status, exchanged.text).toBe(200)
    // A refresh keeps its answer sealed for the 5-second grace window.
    const tokens = await refresh(first, env, client, exchanged.json.refresh_token)
    expect(tokens.status, tokens.text).toBe(200)
    const hook = await createWebhook(first, {
      environment_id: env.environment_id,
      url: receiver.url(),
      event_types: ["user.created"],
    })
    const connection = await first.management("/v1/connections", {
      body: {
        environment_id: env.environment_id,
        provider: "google",
        mode: "byo",
        provider_key: "google",
        provider_client_id: "cid",
        provider_client_secret: CONNECTION_SECRET,
      },
    })
    expect(connection.status, connection.text).toBe(201)
    const idempotent = { "idempotency-key": "rotation-key-1" }
    const apiKeyBody = { workspace_id: env.workspace_id, name: "Rotation", scopes: ["projects:read"] }
    const created = await first.management("/v1/api-keys", { body: apiKeyBody, headers: idempotent })
    expect(created.status, created.text).toBe(201)
    // An Email OTP started under A: its mail job (no worker here) holds the code sealed under A.
    const loginClient = await createLoginClient(first, env)
    const txn = await createTransaction(first, env, loginClient)
    const otp = await publicApi(first, env, `/auth/transactions/${txn}/email/start`, {
      body: { email: uniqueEmail("rotation") },
    })
    expect(otp.status, otp.text).toBe(202)
    // An email change's notice to the old address (its job payload holds both addresses sealed).
    await first.run(
      enqueueEmailChangeNotice({
        environmentId: env.environment_id,
        userId: user.id,
        securityVersion: 2,
        oldEmail: "old@example.com",
        newEmail: "new@example.com",
      }),
    )
    // A hard bounce suppresses an address, and an address signed in as another email: both are
    // kept as HMACs that must still be found after the rotation (HMAC data keys).
    const bounced = uniqueEmail("bounced")
    const mail = await first.run(
      trackDelivery(env.environment_id, "login_code", { to: bounced, subject: "s", text: "t" }),
    )
    const deliveryId = mail.headers![DELIVERY_ID_HEADER]!
    expect(
      await first.run(
        recordBounce({ refs: [{ deliveryId }], recipient: bounced, bounceType: "hard", source: "generic" }),
      ),
    ).toMatchObject({ matched: true, suppressed: true })
    const suppressed = (a: TestApp) =>
      a.run(
        isAddressSuppressed({
          workspaceId: env.workspace_id,
          environmentId: env.environment_id,
          address: bounced,
          userFlag: undefined,
        }),
      )
    expect(await suppressed(first)).toBe(true)
    const knownSubject = emailAddressSubject("returning@example.com", "198.51.100.20")
    await first.run(rateLimit.remember(env.environment_id, KNOWN_ADDRESS, knownSubject))
    const idA = keyId(keyA)
    expect(new Set(await sealedKeyIds(first))).toEqual(new Set([idA]))
    expect((await sealedKeyIds(first)).length).toBeGreaterThanOrEqual(5)

    // --- B with A as previous (expand): the start records nothing and seals under A, so a process
    // still on A alone reads all it writes; B alone is still a wrong key. -------------------------
    const second = await restart(databaseUrl, { MASTER_KEY: B, MASTER_KEY_PREVIOUS: A })
    expect(await second.run(sealingKeyId)).toBe(idA)
    const expanded = await second.management("/v1/api-keys", {
      body: apiKeyBody,
      headers: { "idempotency-key": "rotation-key-2" },
      key: env.api_key,
    })
    expect(expanded.status, expanded.text).toBe(201)
    expect(new Set(await sealedKeyIds(second))).toEqual(new Set([idA]))
    expect(await second.run(verifyMasterKey(makeCrypto({ current: keyA })))).toBe("master-key")
    await expect(second.run(verifyMasterKey(makeCrypto({ current: keyB })))).rejects.toThrow(/does not match/)
    const serverWithB = await runEntry("src/main.ts", [], {
      DATABASE_URL: databaseUrl,
      MASTER_KEY: B,
      PORT: String(await freePort()),
    })
    expect(serverWithB.code).toBe(1)
    expect(serverWithB.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(/^authservice: MASTER_KEY does not match/),
    ])
    const cliEnv = { DATABASE_URL: databaseUrl, MASTER_KEY: B, MASTER_KEY_PREVIOUS: A }
    const help = await runEntry("src/cli.ts", ["master-key", "rotate", "--help"], {})
    expect(help.code).toBe(0)
    expect(help.stdout).toContain("usage: npm run cli -- master-key rotate")
    const rotated = await runCliJson(["master-key", "rotate", "--batch-size", "1"], cliEnv)
    expect(rotated.code, rotated.stderr).toBe(0)
    const idB = keyId(keyB)
    expect(rotated.json).toEqual({
      from_key_id: idA,
      to_key_id: idB,
      completed: true,
      remaining: {},
      old_key_needed_until: expect.any(String),
      resealed: expect.objectContaining({
        "signing_keys.private_key_sealed": 1,
        "webhooks.secret_sealed": 1,
        "connections.provider_client_secret_sealed": 1,
        "idempotency_keys.response_sealed": 2,
        "graphile_worker.jobs.send_login_code": 1,
        "refresh_families.grace_response_sealed": 1,
        "graphile_worker.jobs.send_email_change_notice": 1,
        "hmac_data_keys.key_sealed": 2,
      }),
    })
    expect(new Set(await sealedKeyIds(second))).toEqual(new Set([idB]))
    // Progress is recorded per column (the resumable cursor).
    const progress = await sqlRows<{ sealed_column: string; completed: boolean }>(
      second,
      "select sealed_column, completed_at is not null as completed from master_key_rotation_progress where to_key_id = $1",
      [idB],
    )
    expect(progress.length).toBeGreaterThanOrEqual(7)
    expect(progress.every((p) => p.completed)).toBe(true)
    // Run again: nothing left to do, same report.
    const again = await runCliJson(["master-key", "rotate"], cliEnv)
    expect([again.code, again.json]).toEqual([0, rotated.json])

    // The refresh grace answer now opens under B alone.
    const [family] = await sqlRows<{ id: string; grace_generation: number; grace_response_sealed: string }>(
      second,
      "select id, grace_generation, grace_response_sealed from refresh_families where grace_response_sealed is not null",
    )
    const grace = await Effect.runPromise(
      makeCrypto({ current: keyB }).open(
        graceSealContext(family!.id, family!.grace_generation),
        family!.grace_response_sealed,
      ),
    )
    expect(grace.toString("utf8")).toContain(tokens.json.access_token)
    // The OTP mail job now opens under B alone; its code (HMAC'd under A) still verifies while A is the previous key.
    const [job] = await sqlRows<{ payload: { challenge_id: string; generation: number; sealed: string } }>(
      second,
      "select j.payload from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id where t.identifier = 'send_login_code'",
    )
    const opened = await Effect.runPromise(
      makeCrypto({ current: keyB }).open(
        loginCodeMailContext(job!.payload.challenge_id, job!.payload.generation),
        job!.payload.sealed,
      ),
    )
    const code = JSON.parse(opened.toString("utf8")).code as string
    // So does the email-change notice.
    const [notice] = await sqlRows<{ payload: { user_id: string; security_version: number; sealed: string } }>(
      second,
      "select j.payload from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id where t.identifier = 'send_email_change_notice'",
    )
    const noticeOpened = await Effect.runPromise(
      makeCrypto({ current: keyB }).open(
        emailChangeNoticeContext(notice!.payload.user_id, notice!.payload.security_version),
        notice!.payload.sealed,
      ),
    )
    expect(JSON.parse(noticeOpened.toString("utf8"))).toEqual({ to: "old@example.com", new_email: "new@example.com" })
    const verified = await publicApi(second, env, `/auth/transactions/${txn}/email/verify`, {
      body: { challenge_id: otp.json.challenge_id, code },
    })
    expect(verified.status, verified.text).toBe(200)

    // --- Step 4 too early: B alone is refused for 10 minutes after the rotation completed (codes
    // and social states HMAC'd under A verify only with A), then accepted. ----------------------
    const neededUntil = Date.parse(rotated.json!["old_key_needed_until"])
    // (The command ran on the wall clock.)
    expect(neededUntil - Date.now()).toBeGreaterThan(9 * 60_000)
    expect(neededUntil - Date.now()).toBeLessThanOrEqual(10 * 60_000)
    await expect(second.run(verifyMasterKey(makeCrypto({ current: keyB })))).rejects.toThrow(
      `The master-key rotation completed, but Email OTP codes and social login states made under the old key verify only with it until ${rotated.json!["old_key_needed_until"]}: keep MASTER_KEY_PREVIOUS set to the old key until then (step 4)`,
    )
    // Both keys are still accepted meanwhile.
    expect(await second.run(verifyMasterKey(makeCrypto({ current: keyB, previous: keyA })))).toBe("master-key")
    await second.advance(neededUntil - second.now() + 1)
    expect(await second.run(verifyMasterKey(makeCrypto({ current: keyB })))).toBe("master-key")
    // The next app starts on its own clock (now): the ten minutes pass for it too.
    await sqlRows(
      second,
      "update master_key_check set old_key_needed_until = old_key_needed_until - interval '10 minutes 5 seconds'",
    )

    // --- B only: every secret still works. --------------------------------------------------------
    const third = await restart(databaseUrl, { MASTER_KEY: B })
    // Signing key (unsealed under B) signs new tokens; client secret and refresh token (hashes) still verify.
    const refreshed = await refresh(third, env, client, tokens.json.refresh_token)
    expect(refreshed.status, refreshed.text).toBe(200)
    // (Each start takes a new port, and the issuer carries it.)
    const issuedBy = { ...env, issuer: `http://localhost:${third.port}/e/${env.environment_id}` }
    await verifyJwt(third, issuedBy, refreshed.json.access_token, "at+jwt")
    await verifyJwt(third, issuedBy, refreshed.json.id_token, "JWT")
    // Webhook secret: the test delivery is signed with the secret shown at creation.
    const delivery = receiver.next()
    expect(
      (await third.management(`/v1/webhooks/${hook.id}/test`, { body: {}, key: env.api_key })).status,
    ).toBeLessThan(300)
    const received = await delivery
    const check = verifyWebhook({
      headers: received.headers,
      rawBody: Buffer.from(received.rawBody),
      secrets: [hook.secret],
      now: third.now(),
    })
    expect(check.ok).toBe(true)
    // Provider client secret.
    const stored = await third.run(usableConnection(env.environment_id, "google"))
    expect(await third.run(openProviderClientSecret(stored!))).toBe(CONNECTION_SECRET)
    // API keys (the bootstrap one and the idempotently created one: SHA-256 only) authenticate.
    expect((await third.management(`/v1/workspaces/${env.workspace_id}`, { key: env.api_key })).status).toBe(200)
    expect((await third.management(`/v1/projects/${env.project_id}`, { key: created.json.secret })).status).toBe(200)
    // The idempotent answer (sealed) replays identically.
    const replay = await third.management("/v1/api-keys", { body: apiKeyBody, headers: idempotent, key: env.api_key })
    expect([replay.status, replay.json]).toEqual([201, created.json])
    // The suppression recorded before the rotation still suppresses (the old key is gone), its
    // address's later bounce is still tied to it, and the known address is still known.
    expect(await suppressed(third)).toBe(true)
    expect(await third.run(rateLimit.isRemembered(env.environment_id, KNOWN_ADDRESS, knownSubject))).toBe(true)
    const later = await third.run(
      trackDelivery(env.environment_id, "login_code", { to: bounced, subject: "s", text: "t" }),
    )
    expect(
      await third.run(
        recordBounce({
          refs: [{ deliveryId: later.headers![DELIVERY_ID_HEADER]! }],
          recipient: bounced,
          bounceType: "hard",
          source: "generic",
        }),
      ),
    ).toMatchObject({ matched: true, suppressed: true })
    const [suppressions] = await sqlRows<{ n: number }>(
      third,
      "select count(*)::int as n from email_suppressions where environment_id = $1",
      [env.environment_id],
    )
    expect(suppressions!.n).toBe(1)
    // The old key alone is now refused.
    await expect(third.run(verifyMasterKey(makeCrypto({ current: keyA })))).rejects.toThrow(/does not match/)
  }, 180_000)
})

describe("re-sealing is resumable, compare-and-set, and covers every sealed column", () => {
  it("every `*_sealed` column of the schema is known to the rotation; an unknown one refuses it", async () => {
    const fresh = await restart(undefined, { MASTER_KEY: A })
    expect(await fresh.run(rotationRepo.unregisteredSealedValues)).toEqual([])
    // Without a previous key there is nothing to rotate from.
    await expect(fresh.run(rotateMasterKey({ batchSize: 10, acknowledgementTimeoutMs: 1000 }))).rejects.toThrow(
      /MASTER_KEY_PREVIOUS to the old one/,
    )
    const withPrevious = await restart(fresh.databaseUrl, { MASTER_KEY: B, MASTER_KEY_PREVIOUS: A })
    await sqlRows(withPrevious, "alter table webhooks add column extra_sealed text")
    await expect(withPrevious.run(rotateMasterKey({ batchSize: 10, acknowledgementTimeoutMs: 1000 }))).rejects.toThrow(
      /Sealed values unknown to the rotation: webhooks.extra_sealed$/,
    )
    // A column named plain `sealed`, and a queued job of another task whose payload carries a sealed value, are seen too.
    await sqlRows(withPrevious, "create table extra_chunks (id text primary key, sealed text)")
    await sqlRows(
      withPrevious,
      `select (graphile_worker.add_job('some_new_task', '{"sealed": "v1.x.y.z.w"}'::json)).id::text as id`,
    )
    await expect(withPrevious.run(rotateMasterKey({ batchSize: 10, acknowledgementTimeoutMs: 1000 }))).rejects.toThrow(
      /Sealed values unknown to the rotation: extra_chunks.sealed, webhooks.extra_sealed, graphile_worker.jobs.some_new_task$/,
    )
    // Refused before the switch: the service still seals under A.
    const [state] = await sqlRows<{ check: string; previous: string | null }>(
      withPrevious,
      "select check_value as check, previous_check_value as previous from master_key_check",
    )
    expect(state).toEqual({ check: makeCrypto({ current: keyA }).keyCheck(), previous: null })
    expect(await withPrevious.run(sealingKeyId)).toBe(keyId(keyA))
  }, 60_000)

  it("a run that stops half-way resumes after the last recorded row; a value the service changed meanwhile is not overwritten", async () => {
    const first = await restart(undefined, { MASTER_KEY: A })
    const env = await first.bootstrap()
    const receiverUrl = "http://127.0.0.1:9/hook"
    const hooks: Array<{ id: string }> = []
    for (let i = 0; i < 3; i++)
      hooks.push(
        await createWebhook(first, {
          environment_id: env.environment_id,
          url: receiverUrl,
          event_types: ["user.created"],
        }),
      )
    const second = await restart(first.databaseUrl, { MASTER_KEY: B, MASTER_KEY_PREVIOUS: A })
    // The rotation walks rows in the database's order of the key.
    const order = (await sqlRows<{ id: string }>(second, "select id from webhooks order by id")).map((r) => r.id)
    const ordered = order.map((id) => hooks.find((h) => h.id === id)!)
    // The second webhook's update fails (a crash) until the table crash_over exists: the run stops
    // after the first batch (batch size 1).
    await sqlRows(
      second,
      `create function simulated_crash() returns trigger language plpgsql as $$
      begin
        if new.id = '${ordered[1]!.id}' and to_regclass('crash_over') is null then raise exception 'simulated crash'; end if;
        return new;
      end $$`,
    )
    await sqlRows(
      second,
      "create trigger simulated_crash before update of secret_sealed on webhooks for each row execute function simulated_crash()",
    )
    await expect(second.run(rotateMasterKey({ batchSize: 1, acknowledgementTimeoutMs: 1000 }))).rejects.toThrow(
      /Query failed/,
    )
    await sqlRows(second, "create table crash_over ()")
    const stored = async () =>
      new Map(
        (await sqlRows<{ id: string; secret_sealed: string }>(second, "select id, secret_sealed from webhooks")).map(
          (r) => [r.id, r.secret_sealed],
        ),
      )
    const afterCrash = await stored()
    const idB = keyId(keyB)
    expect(afterCrash.get(ordered[0]!.id)!.split(".")[1]).toBe(idB)
    expect(afterCrash.get(ordered[1]!.id)!.split(".")[1]).toBe(keyId(keyA))
    const [progress] = await sqlRows<{ last_row: string; resealed: string; completed_at: Date | null }>(
      second,
      "select last_row, resealed::text, completed_at from master_key_rotation_progress where to_key_id = $1 and sealed_column = 'webhooks.secret_sealed'",
      [idB],
    )
    expect({ ...progress, resealed: Number(progress!.resealed) }).toEqual({
      last_row: ordered[0]!.id,
      resealed: 1,
      completed_at: null,
    })

    // Meanwhile the service rotates the third webhook's secret (sealed under B by the service itself).
    const rotatedSecret = await second.management(`/v1/webhooks/${ordered[2]!.id}/rotate-secret`, {
      method: "POST",
      key: env.api_key,
    })
    expect(rotatedSecret.status, rotatedSecret.text).toBe(200)
    // A compare-and-set from the stale value read before that change does nothing.
    const webhooksColumn = SEALED_VALUES.find((v) => v.name === "webhooks.secret_sealed")!
    const changed = await second.run(
      rotationRepo.replaceSealed(webhooksColumn, ordered[2]!.id, afterCrash.get(ordered[2]!.id)!, "v1.x.y.z.w"),
    )
    expect(changed).toBe(false)
    const serviceValue = (await stored()).get(ordered[2]!.id)!

    const report = await second.run(rotateMasterKey({ batchSize: 1, acknowledgementTimeoutMs: 1000 }))
    expect(report.completed).toBe(true)
    const final = await stored()
    expect(final.get(ordered[0]!.id)).toBe(afterCrash.get(ordered[0]!.id)) // not re-sealed a second time
    expect(final.get(ordered[1]!.id)!.split(".")[1]).toBe(idB)
    expect(final.get(ordered[2]!.id)).toBe(serviceValue)
    expect(report.resealed["webhooks.secret_sealed"]).toBe(2)
  }, 60_000)
})

describe("a process passing its key check while the rotation checks the live processes", () => {
  it("an old-key process whose key check is mid-transaction is seen by the rotation (which then refuses), never missed", async () => {
    const app = await restart(undefined, { MASTER_KEY: A })
    const oldProcess: ProcessRegistration = {
      processId: "prc_old_key",
      kind: "server",
      host: "old-host",
      pid: 1,
      masterKeyId: keyId(keyA),
      previousMasterKeyId: undefined,
    }
    const newProcess: ProcessRegistration = {
      processId: "prc_new_key",
      kind: "server",
      host: "new-host",
      pid: 2,
      masterKeyId: keyId(keyB),
      previousMasterKeyId: keyId(keyA),
    }
    // The old-key process's heartbeat insert (the last step of its key check) takes 3 seconds.
    await sqlRows(
      app,
      `create function slow_heartbeat() returns trigger language plpgsql as $$
      begin if new.process_id = 'prc_old_key' then perform pg_sleep(3); end if; return new; end $$`,
    )
    await sqlRows(
      app,
      "create trigger slow_heartbeat before insert on process_heartbeats for each row execute function slow_heartbeat()",
    )
    const oldStart = app.run(verifyMasterKey(makeCrypto({ current: keyA }), { register: oldProcess }))
    await until(
      "the old-key process to be inside its key check",
      async () =>
        (
          await sqlRows(
            app,
            "select 1 from pg_stat_activity where wait_event = 'PgSleep' and datname = current_database()",
          )
        ).length > 0
          ? true
          : undefined,
      10_000,
    )
    // Meanwhile a server starts with both keys (sealing under A) and the operator runs the rotation.
    expect(
      await app.run(verifyMasterKey(makeCrypto({ current: keyB, previous: keyA }), { register: newProcess })),
    ).toBe("previous-key")
    const rotation = await app.run(
      Effect.exit(
        rotateMasterKey({ batchSize: 10, acknowledgementTimeoutMs: 1000 }).pipe(
          Effect.provide(CryptoFromKeyring({ current: keyB, previous: keyA })),
        ),
      ),
    )
    // The old-key process passed its key check (it began before the rotation did) and is listed:
    // the rotation was refused, nothing was re-sealed and the service was not switched.
    expect(await oldStart).toBe("master-key")
    expect(rotation._tag).toBe("Failure")
    expect(String(rotation._tag === "Failure" ? rotation.cause : "")).toMatch(
      /Refused, nothing re-sealed: 1 server process runs without MASTER_KEY=<new>.*server on old-host \(pid 1\) with MASTER_KEY \S+ only/,
    )
    expect(await sqlRows(app, "select 1 from master_key_rotation_progress")).toEqual([])
    expect(await sqlRows(app, "select previous_check_value from master_key_check")).toEqual([
      { previous_check_value: null },
    ])
  }, 60_000)
})

describe("the switch: re-sealing waits until every live process has acknowledged it", () => {
  it("a live process that does not acknowledge stops the rotation after the switch, nothing re-sealed; starts in the switched state; its heartbeat switches, then acknowledges; the rotation then completes", async () => {
    const idA = keyId(keyA)
    const idB = keyId(keyB)
    const first = await restart(undefined, { MASTER_KEY: A })
    const env = await first.bootstrap()
    await createWebhook(first, {
      environment_id: env.environment_id,
      url: "http://127.0.0.1:9/hook",
      event_types: ["user.created"],
    })
    const app = await restart(first.databaseUrl, { MASTER_KEY: B, MASTER_KEY_PREVIOUS: A })
    const checkOf = (key: Uint8Array) => makeCrypto({ current: key }).keyCheck()
    const keyCheckRow = async () =>
      (
        await sqlRows<{ check: string; previous: string | null }>(
          app,
          "select check_value as check, previous_check_value as previous from master_key_check",
        )
      )[0]
    const sealingOf = async (processId: string) =>
      (
        await sqlRows<{ sealing_key_id: string }>(
          app,
          "select sealing_key_id from process_heartbeats where process_id = $1",
          [processId],
        )
      )[0]?.sealing_key_id

    // A server started with both keys before the switch (so sealing under A) that does not beat.
    const silent: ProcessRegistration = {
      processId: "prc_silent",
      kind: "server",
      host: "silent-host",
      pid: 7,
      masterKeyId: idB,
      previousMasterKeyId: idA,
    }
    const silentCrypto = makeCrypto({ current: keyB, previous: keyA })
    expect(await app.run(verifyMasterKey(silentCrypto, { register: silent }))).toBe("previous-key")
    expect([silentCrypto.sealingKeyId(), await sealingOf("prc_silent")]).toEqual([idA, idA])

    const waitedFrom = Date.now()
    const stopped = await app.run(Effect.exit(rotateMasterKey({ batchSize: 10, acknowledgementTimeoutMs: 1500 })))
    // The wait is real time (the test clock did not move).
    expect(Date.now() - waitedFrom).toBeGreaterThanOrEqual(1500)
    expect(stopped._tag).toBe("Failure")
    expect(String(stopped._tag === "Failure" ? stopped.cause : "")).toContain(
      `Switched (new values are sealed under MASTER_KEY, key id ${idB}), but nothing re-sealed: ` +
        `1 server process has not acknowledged the switch within 1.5 s: server on silent-host (pid 7) still sealing under ${idA}. ` +
        "A process acknowledges at its heartbeat (every 5 s); one that stopped without shutting down stops counting 120 s after its last heartbeat. " +
        "Check that it runs and reaches the database (or stop it), then run this again (docs/master-key-rotation.md, step 3)",
    )
    // Switched, nothing re-sealed; the process that ran it seals under B.
    expect(await keyCheckRow()).toEqual({ check: checkOf(keyB), previous: checkOf(keyA) })
    expect(await sqlRows(app, "select 1 from master_key_rotation_progress")).toEqual([])
    expect(new Set(await sealedKeyIds(app))).toEqual(new Set([idA]))
    expect(await app.run(sealingKeyId)).toBe(idB)

    // Starts once switched: both keys seal under B at once (and say so in their row); the old key
    // alone, the keys swapped, another key and the new key alone are refused.
    const late: ProcessRegistration = {
      processId: "prc_late",
      kind: "worker",
      host: "late-host",
      pid: 8,
      masterKeyId: idB,
      previousMasterKeyId: idA,
    }
    const lateCrypto = makeCrypto({ current: keyB, previous: keyA })
    expect(await app.run(verifyMasterKey(lateCrypto, { register: late }))).toBe("master-key")
    expect([lateCrypto.sealingKeyId(), await sealingOf("prc_late")]).toEqual([idB, idB])
    await expect(app.run(verifyMasterKey(makeCrypto({ current: keyA })))).rejects.toThrow(
      "A master-key rotation away from this MASTER_KEY has switched to the new key (`master-key rotate`): start with the new key as MASTER_KEY and this one as MASTER_KEY_PREVIOUS (step 2)",
    )
    await expect(app.run(verifyMasterKey(makeCrypto({ current: keyA, previous: keyB })))).rejects.toThrow(
      /has switched to the key given as MASTER_KEY_PREVIOUS/,
    )
    await expect(app.run(verifyMasterKey(makeCrypto({ current: randomBytes(32), previous: keyB })))).rejects.toThrow(
      /earlier master-key rotation is not finished/,
    )
    await expect(app.run(verifyMasterKey(makeCrypto({ current: keyB })))).rejects.toThrow(/rotation is not finished/)

    // The silent server's heartbeat: the first beat reads the switch and switches (its row still
    // says A: a request that sealed under A just before has until the next beat to commit); the
    // second acknowledges. (Beats run by hand here: the test clock holds the 5-second fiber.)
    await app.run(
      Effect.gen(function* () {
        const heartbeat = yield* ProcessHeartbeat
        yield* heartbeat.beat
        expect(silentCrypto.sealingKeyId()).toBe(idB)
        expect(yield* Effect.promise(() => sealingOf("prc_silent"))).toBe(idA)
        yield* heartbeat.beat
        expect(yield* Effect.promise(() => sealingOf("prc_silent"))).toBe(idB)
        // Run again (this test runner has no heartbeat of its own): every live process has acknowledged.
        const report = yield* rotateMasterKey({ batchSize: 10, acknowledgementTimeoutMs: 1500 }).pipe(
          Effect.provideService(ProcessHeartbeat, ProcessHeartbeat.of({ beat: Effect.void })),
        )
        expect(report).toMatchObject({ from_key_id: idA, to_key_id: idB, completed: true, remaining: {} })
        expect(report.resealed["webhooks.secret_sealed"]).toBe(1)
      }).pipe(Effect.provide(ProcessHeartbeatLive(silent).pipe(Layer.provide(Layer.succeed(Crypto, silentCrypto))))),
    )
    expect(new Set(await sealedKeyIds(app))).toEqual(new Set([idB]))
    expect(await keyCheckRow()).toEqual({ check: checkOf(keyB), previous: null })
  }, 60_000)
})
