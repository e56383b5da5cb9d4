import { createHash, randomBytes } from "node:crypto"
import { mkdtempSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest"
import { keyId } from "../../src/platform/crypto.js"
import { freePort } from "../../src/platform/free-port.js"
import { type Answer, call, type Child, killGroup, startEntry, stopChild, until } from "../faults/support.js"
import { startSmtpSink } from "../login/support.js"
import { type FakeProviders, startFakeProviders } from "../social/fake-providers.js"
import { runCliJson, runEntry } from "../support/processes.js"
import { cloneDatabase } from "../support/template.js"

// docs/master-key-rotation.md, expand/contract, with real server and worker processes on one
// database: while the rolling restart of step 2 is under way (one server restarted with both
// keys, another server and the worker still on the old key alone) every value one process
// writes, another reads, in both directions: an Email OTP (its mail job sealed, its code
// HMAC'd) started on one server is mailed by the worker and verifies on the other, an
// Idempotency-Key replay on the other server returns the stored answer, a refresh grace replay
// works, a social login state made on one server is accepted by the other, and the HMAC data
// keys one creates the other opens. Then `master-key rotate` switches, waits for every live
// process to acknowledge (a worker stopped with SIGSTOP never does: the command stops with a
// clear message, having re-sealed nothing), and, once it has, re-seals; the service keeps
// serving throughout, and no request anywhere is answered with a 5xx.

const PUBLIC_PORT = 4000 // the port in the public host names every server is configured with
const ISSUER_HOST = `localhost:${PUBLIC_PORT}`
const MANAGEMENT_HOST = `api.localhost:${PUBLIC_PORT}`

const A = randomBytes(32).toString("base64url") // the old key
const B = randomBytes(32).toString("base64url") // the new key
const idA = keyId(Buffer.from(A, "base64url"))
const idB = keyId(Buffer.from(B, "base64url"))

interface Keys {
  readonly current: string
  readonly previous?: string
}
interface Server {
  readonly child: Child
  readonly port: number
  readonly name: string
}

let db: pg.Client
let smtp: Awaited<ReturnType<typeof startSmtpSink>>
let fake: FakeProviders
let base: Record<string, string>
const children: Array<Child> = []
/** Every answer a server gave in this test: none may be a 5xx. */
const answers: Array<{ readonly what: string; readonly status: number; readonly text: string }> = []

beforeAll(async () => {
  const database = await cloneDatabase(inject("serverUrl"), inject("templateDb"))
  db = new pg.Client({ connectionString: database.url })
  await db.connect()
  smtp = await startSmtpSink()
  fake = await startFakeProviders()
  base = {
    DATABASE_URL: database.url,
    DATA_DIR: mkdtempSync(join(tmpdir(), "authservice-rolling-")),
    CANONICAL_ISSUER_HOST: ISSUER_HOST,
    MANAGEMENT_HOST,
    SMTP_URL: smtp.url,
    // The fake providers on loopback, reached over HTTPS with the test CA (test/social/support.ts).
    SOCIAL_PROVIDER_HOSTS: fake.hostsSetting,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    NODE_EXTRA_CA_CERTS: process.env["NODE_EXTRA_CA_CERTS"]!,
    RATE_LIMIT_IP_PER_MINUTE: "100000",
    RATE_LIMIT_CLIENT_PER_MINUTE: "100000",
    RATE_LIMIT_EMAIL_PER_10_MINUTES: "1000",
    RATE_LIMIT_EMAIL_CEILING_PER_HOUR: "1000",
  }
}, 60_000)
afterAll(async () => {
  for (const child of children) killGroup(child, "SIGCONT")
  await Promise.all(children.map(stopChild))
  await db?.end()
  await smtp?.close()
  await fake?.close()
}, 60_000)

const withKeys = (keys: Keys) => ({
  ...base,
  MASTER_KEY: keys.current,
  ...(keys.previous ? { MASTER_KEY_PREVIOUS: keys.previous } : {}),
})

const startServer = async (name: string, keys: Keys): Promise<Server> => {
  const port = await freePort()
  const child = await startEntry("src/main.ts", { ...withKeys(keys), PORT: String(port) }, /authservice listening on/)
  children.push(child)
  return { child, port, name }
}
const startWorker = async (keys: Keys) => {
  const child = await startEntry("src/worker.ts", withKeys(keys), /worker: running/)
  children.push(child)
  return child
}

const rotate = (...flags: Array<string>) =>
  runCliJson(["master-key", "rotate", ...flags], withKeys({ current: B, previous: A }))

interface Setup {
  interaction: string
  apiKey: string
  workspaceId: string
  environmentId: string
  clientId: string
  redirectUri: string
}
let setup: Setup

/** One request to one server, kept in `answers`. */
const ask = async (server: Server, host: string, path: string, init: Parameters<typeof call>[3] = {}) => {
  const answer = await call(server.port, host, path, init)
  answers.push({ what: `${server.name}: ${init.method ?? "GET"} ${path}`, status: answer.status, text: answer.text })
  return answer
}
const json = (answer: Answer) => JSON.parse(answer.text)
const form = (params: Record<string, string>) => ({
  method: "POST",
  rawBody: new URLSearchParams(params).toString(),
  headers: { "content-type": "application/x-www-form-urlencoded" },
})
const publicPost = (server: Server, path: string, body?: unknown) =>
  ask(server, setup.interaction, `/v1/auth/transactions${path}`, {
    method: "POST",
    ...(body === undefined ? {} : { body }),
  })
const token = (server: Server, params: Record<string, string>) =>
  ask(server, ISSUER_HOST, `/e/${setup.environmentId}/oauth2/token`, form({ ...params, client_id: setup.clientId }))

interface Transaction {
  readonly id: string
  readonly verifier: string
}

const newTransaction = async (server: Server): Promise<Transaction> => {
  const verifier = randomBytes(32).toString("base64url")
  const created = await publicPost(server, "", {
    client_id: setup.clientId,
    redirect_uri: setup.redirectUri,
    code_challenge_method: "S256",
    state: "s-1",
    nonce: "n-1",
    code_challenge: createHash("sha256").update(verifier).digest("base64url"),
    scope: "openid email offline_access",
  })
  expect(created.status, created.text).toBe(201)
  return { id: json(created).transaction_id, verifier }
}

/** complete on `completeOn`, the code redeemed on `exchangeOn`: the token answer. */
const completeAndExchange = async (completeOn: Server, exchangeOn: Server, txn: Transaction, socialProof?: string) => {
  const done = await publicPost(
    completeOn,
    `/${txn.id}/complete`,
    socialProof === undefined ? undefined : { social_proof: socialProof },
  )
  expect(done.status, done.text).toBe(200)
  const tokens = await token(exchangeOn, {
    grant_type: "authorization_code",
    code: json(done).authorization_code,
    redirect_uri: setup.redirectUri,
    code_verifier: txn.verifier,
  })
  expect(tokens.status, tokens.text).toBe(200)
  return json(tokens) as { access_token: string; refresh_token: string }
}

let emails = 0
const newEmail = () => `rolling.${++emails}.${randomBytes(3).toString("hex")}@example.com`

/** An Email OTP started on `from`: the challenge, and the code the worker mails (real SMTP). */
const otpStart = async (from: Server) => {
  const email = newEmail()
  const txn = await newTransaction(from)
  const started = await publicPost(from, `/${txn.id}/email/start`, { email })
  expect(started.status, started.text).toBe(202)
  return { txn, email, challenge: json(started).challenge_id as string }
}
const otpVerify = async (on: Server, otp: Awaited<ReturnType<typeof otpStart>>) => {
  const code = await smtp.waitForCode(otp.email, 1, 30_000)
  const verified = await publicPost(on, `/${otp.txn.id}/email/verify`, { challenge_id: otp.challenge, code })
  expect(verified.status, verified.text).toBe(200)
}

/** Started on `from`, verified and completed on `to`, the code redeemed back on `from`. */
const otpLogin = async (from: Server, to: Server) => {
  const otp = await otpStart(from)
  await otpVerify(to, otp)
  return completeAndExchange(to, from, otp.txn)
}

/** An idempotent create on `first`, replayed with the same key on `second`: the stored answer. */
const idempotentReplay = async (first: Server, second: Server, key = `rolling-${randomBytes(6).toString("hex")}`) => {
  const create = (server: Server) =>
    ask(server, MANAGEMENT_HOST, "/v1/api-keys", {
      method: "POST",
      headers: { authorization: `Bearer ${setup.apiKey}`, "idempotency-key": key },
      body: { workspace_id: setup.workspaceId, name: key, scopes: ["projects:read"] },
    })
  const created = await create(first)
  expect(created.status, created.text).toBe(201)
  const replayed = await create(second)
  expect([replayed.status, json(replayed)]).toEqual([201, json(created)])
  return { key, replay: () => create(second), answer: json(created) }
}

/** A refresh on `first`, and the same refresh token again on `second` within the 5-second grace: the same answer. */
const graceReplay = async (first: Server, second: Server, refreshToken: string) => {
  const rotated = await token(first, { grant_type: "refresh_token", refresh_token: refreshToken })
  expect(rotated.status, rotated.text).toBe(200)
  const replayed = await token(second, { grant_type: "refresh_token", refresh_token: refreshToken })
  expect([replayed.status, json(replayed)]).toEqual([200, json(rotated)])
  return json(rotated) as { refresh_token: string }
}

/** A social login started on `startOn` (state signed, PKCE verifier sealed) whose provider answer comes back to `callbackOn`. */
const socialLogin = async (startOn: Server, callbackOn: Server) => {
  fake.setUser("google", {
    sub: `g-${randomBytes(4).toString("hex")}`,
    email: newEmail(),
    email_verified: true,
    name: "Rolling Restart",
  })
  const txn = await newTransaction(startOn)
  const started = await publicPost(startOn, `/${txn.id}/social/google/start`)
  expect(started.status, started.text).toBe(200)
  const visit = await fake.visit(json(started).authorization_url)
  expect(visit.status).toBe(302)
  const back = new URL(visit.location!)
  const callback = await ask(callbackOn, back.host, `${back.pathname}${back.search}`)
  expect(callback.status, callback.text).toBe(302)
  const proof = new URL(callback.headers["location"] as string).searchParams.get("social_proof")
  expect(proof, String(callback.headers["location"])).toMatch(/^[A-Za-z0-9_-]{43}$/)
  return completeAndExchange(callbackOn, startOn, txn, proof!)
}

/** Every cross-process read, in both directions between `x` and `y`. */
const crossReads = async (x: Server, y: Server) => {
  for (const [from, to] of [
    [x, y],
    [y, x],
  ] as const) {
    const tokens = await otpLogin(from, to)
    await idempotentReplay(from, to)
    await graceReplay(from, to, tokens.refresh_token)
    await socialLogin(from, to)
  }
}

/** The key ids of the lasting sealed values (signing keys, HMAC data keys, provider secrets). */
const lastingKeyIds = async () =>
  new Set(
    (
      await db.query<{ k: string }>(`select split_part(private_key_sealed, '.', 2) as k from signing_keys
  union all select split_part(key_sealed, '.', 2) from hmac_data_keys
  union all select split_part(provider_client_secret_sealed, '.', 2) from connections where provider_client_secret_sealed is not null`)
    ).rows.map((r) => r.k),
  )
/** The key ids of every sealed value still held (the lasting ones, idempotent answers, queued mail jobs). */
const allKeyIds = async () =>
  new Set([
    ...(await lastingKeyIds()),
    ...(
      await db.query<{ k: string }>(`select split_part(response_sealed, '.', 2) as k
  from idempotency_keys where response_sealed is not null
  union all select split_part(j.payload->>'sealed', '.', 2) from graphile_worker._private_jobs j where j.payload->>'sealed' is not null`)
    ).rows.map((r) => r.k),
  ])
const keyCheck = async () =>
  (await db.query<{ switched: boolean }>("select previous_check_value is not null as switched from master_key_check"))
    .rows[0]
const sealingKeys = async () =>
  (
    await db.query<{ kind: string; sealing_key_id: string }>(
      "select kind, sealing_key_id from process_heartbeats order by kind, sealing_key_id",
    )
  ).rows

describe("a master-key rotation never breaks the running service, even mid-restart", () => {
  it("rolling restart: every cross-process read works both ways; rotate switches, waits for every acknowledgement (a stopped worker stops it, nothing re-sealed), re-seals; no 5xx", async () => {
    // --- The service runs on A: a server and a worker. -----------------------------------------------
    const [serverOld, workerOld] = await Promise.all([
      startServer("server on A", { current: A }),
      startWorker({ current: A }),
    ])
    const boot = await runCliJson(["bootstrap"], withKeys({ current: A }))
    expect(boot.code, boot.stderr).toBe(0)
    const redirectUri = "http://127.0.0.1:4999/callback"
    const client = await call(serverOld.port, MANAGEMENT_HOST, "/v1/clients", {
      method: "POST",
      headers: { authorization: `Bearer ${boot.json!["api_key"]}` },
      body: {
        environment_id: boot.json!["environment_id"],
        client_type: "web_spa",
        name: "Rolling SPA",
        token_endpoint_auth_method: "none",
        redirect_uris: [redirectUri],
        allowed_scopes: ["openid", "email", "offline_access"],
      },
    })
    expect(client.status, client.text).toBe(201)
    setup = {
      interaction: boot.json!["interaction_domain"],
      apiKey: boot.json!["api_key"],
      workspaceId: boot.json!["workspace_id"],
      environmentId: boot.json!["environment_id"],
      clientId: json(client).id,
      redirectUri,
    }

    // --- Step 2 under way: a second server restarted with both keys while the first and the worker
    // still hold A alone. The restarted one writes first: the provider secret, the HMAC data keys. -----
    const serverNew = await startServer("server on B+A", { current: B, previous: A })
    const connection = await ask(serverNew, MANAGEMENT_HOST, "/v1/connections", {
      method: "POST",
      headers: { authorization: `Bearer ${setup.apiKey}` },
      body: {
        environment_id: setup.environmentId,
        mode: "byo",
        provider: "google",
        provider_key: "google",
        provider_client_id: "rolling-client",
        provider_client_secret: "rolling-provider-secret",
      },
    })
    expect(connection.status, connection.text).toBe(201)
    fake.registerClient("google", {
      clientId: "rolling-client",
      clientSecret: "rolling-provider-secret",
      redirectUri: json(connection).callback_url,
    })
    expect((await db.query("select 1 from hmac_data_keys")).rows).toEqual([])
    await crossReads(serverNew, serverOld)
    // Everything the restarted server wrote is under A, which the others hold.
    expect((await db.query("select 1 from hmac_data_keys")).rows.length).toBeGreaterThan(0)
    expect(await allKeyIds()).toEqual(new Set([idA]))
    expect(await keyCheck()).toEqual({ switched: false })

    // --- Step 2 done: the first server and the worker restarted with both keys. -------------------------
    await Promise.all([stopChild(serverOld.child), stopChild(workerOld)])
    const [serverX, worker] = await Promise.all([
      startServer("server X on B+A", { current: B, previous: A }),
      startWorker({ current: B, previous: A }),
    ])
    const serverY = serverNew
    await crossReads(serverX, serverY)
    expect(await sealingKeys()).toEqual([
      { kind: "server", sealing_key_id: idA },
      { kind: "server", sealing_key_id: idA },
      { kind: "worker", sealing_key_id: idA },
    ])
    // Values made before the switch, read after it: an OTP code (HMAC under A), an idempotent answer (sealed under A).
    const beforeSwitch = await otpStart(serverX)
    const storedBefore = await idempotentReplay(serverX, serverY)
    await smtp.waitForCode(beforeSwitch.email, 1, 30_000)

    // A bad wait is wrong use (exit 2, with the usage), refused before anything changes.
    for (const bad of ["soon", "0"]) {
      const refused = await rotate("--ack-timeout", bad)
      expect([refused.code, refused.stdout, refused.stderr.trim()]).toEqual([
        2,
        "",
        `${
          bad === "0"
            ? "authservice cli: --ack-timeout must be at least 1"
            : `authservice cli: --ack-timeout must be a whole number of seconds (got "${bad}")`
        }; usage: npm run cli -- master-key rotate [--batch-size <n>] [--ack-timeout <seconds>] [--json] (npm run cli -- master-key rotate --help for more)`,
      ])
    }
    expect(await keyCheck()).toEqual({ switched: false })

    // --- Step 3 with a worker that never acknowledges (stopped): switched, nothing re-sealed. ------------
    killGroup(worker, "SIGSTOP")
    const waitedFrom = Date.now()
    const stalled = await rotate("--ack-timeout", "20")
    expect(Date.now() - waitedFrom).toBeGreaterThanOrEqual(20_000)
    expect([stalled.code, stalled.stdout]).toEqual([1, ""])
    expect(stalled.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(
        new RegExp(
          `^authservice cli: Switched \\(new values are sealed under MASTER_KEY, key id ${idB}\\), but nothing re-sealed: 1 worker process has not acknowledged ` +
            `the switch within 20 s: worker on ${hostname()} \\(pid \\d+\\) still sealing under ${idA}\\. .*then run this again \\(docs/master-key-rotation.md, step 3\\)$`,
        ),
      ),
    ])
    expect(await keyCheck()).toEqual({ switched: true })
    expect((await db.query("select 1 from master_key_rotation_progress")).rows).toEqual([])
    expect(await lastingKeyIds()).toEqual(new Set([idA]))
    // Both servers switched at a heartbeat and acknowledged at the next; the stopped worker did not.
    expect(await sealingKeys()).toEqual([
      { kind: "server", sealing_key_id: idB },
      { kind: "server", sealing_key_id: idB },
      { kind: "worker", sealing_key_id: idA },
    ])
    // The switched servers read what was made before the switch and each other's writes.
    await otpVerify(serverY, beforeSwitch)
    await completeAndExchange(serverY, serverX, beforeSwitch.txn)
    const replayedBefore = await storedBefore.replay()
    expect([replayedBefore.status, json(replayedBefore)]).toEqual([201, storedBefore.answer])
    await idempotentReplay(serverY, serverX)
    const tokens = await socialLogin(serverX, serverY)
    await graceReplay(serverY, serverX, tokens.refresh_token)
    // A login code mailed meanwhile is sealed under B for a worker that has not switched yet (it holds B).
    const whileStopped = await otpStart(serverY)
    const [queued] = (
      await db.query<{ k: string }>(
        `select split_part(j.payload->>'sealed', '.', 2) as k from graphile_worker._private_jobs j
      where j.payload->>'challenge_id' = $1`,
        [whileStopped.challenge],
      )
    ).rows
    expect(queued?.k).toBe(idB)
    // A process with the old key alone is refused from the switch on.
    const oldOnly = await runEntry("src/main.ts", [], { ...withKeys({ current: A }), PORT: String(await freePort()) })
    expect([oldOnly.code, oldOnly.stderr]).toEqual([
      1,
      "authservice: A master-key rotation away from this MASTER_KEY has switched to the new key (`master-key rotate`): start with the new key as MASTER_KEY and this one as MASTER_KEY_PREVIOUS (step 2)\n",
    ])

    // --- The worker resumes: it mails the code sealed under B, switches, acknowledges. -------------------
    killGroup(worker, "SIGCONT")
    await otpVerify(serverX, whileStopped)
    await completeAndExchange(serverX, serverY, whileStopped.txn)
    await until(
      "the worker to acknowledge the switch",
      async () => ((await sealingKeys()).every((p) => p.sealing_key_id === idB) ? true : undefined),
      30_000,
    )

    // --- Step 3 again: completes; everything under B; the service keeps serving. --------------------------
    const done = await rotate()
    expect(done.code, done.stderr).toBe(0)
    expect(done.json).toMatchObject({ from_key_id: idA, to_key_id: idB, completed: true, remaining: {} })
    expect(await allKeyIds()).toEqual(new Set([idB]))
    expect(await keyCheck()).toEqual({ switched: false })
    const replayedAfter = await storedBefore.replay()
    expect([replayedAfter.status, json(replayedAfter)]).toEqual([201, storedBefore.answer])
    await crossReads(serverX, serverY)

    // No request anywhere was answered with a 5xx, and no process failed to open a sealed value.
    expect(answers.filter((a) => a.status >= 500 || a.status === 0)).toEqual([])
    expect(answers.length).toBeGreaterThan(60)
    for (const child of children) expect(child.output()).not.toMatch(/SecretBoxError|unknown_key|authentication_failed/)
  }, 420_000)
})
