import { createHash, randomBytes } from "node:crypto"
import { mkdtempSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest"
import { keyId } from "../../src/platform/crypto.js"
import { freePort } from "../../src/platform/free-port.js"
import { cloneDatabase } from "../support/template.js"
import { runCliJson, runEntry } from "../support/processes.js"
import { call, type Child, killGroup, startEntry, stopChild, until } from "../faults/support.js"

// The operator mistake of running `master-key rotate` before every process was restarted with
// both keys (steps 2 and 3 of docs/master-key-rotation.md swapped, or step 2 half done), with
// real server and worker processes: the command is refused, names what still runs without the
// new key, changes nothing, and the running server keeps answering. Once every live process
// holds both keys it switches them to the new key, waits for their acknowledgements, completes,
// and the service keeps working. A process that died without shutting down (its heartbeat row
// left behind) stops counting once its heartbeat is stale.

const A = randomBytes(32).toString("base64url") // the old key
const B = randomBytes(32).toString("base64url") // the new key
const idA = keyId(Buffer.from(A, "base64url"))
const idB = keyId(Buffer.from(B, "base64url"))

let db: pg.Client
let port: number
let base: Record<string, string>
const children: Array<Child> = []

beforeAll(async () => {
  const database = await cloneDatabase(inject("serverUrl"), inject("templateDb"))
  db = new pg.Client({ connectionString: database.url })
  await db.connect()
  port = await freePort()
  base = {
    DATABASE_URL: database.url,
    PORT: String(port),
    DATA_DIR: mkdtempSync(join(tmpdir(), "authservice-rotation-")),
    RATE_LIMIT_IP_PER_MINUTE: "100000",
    RATE_LIMIT_CLIENT_PER_MINUTE: "100000",
    RATE_LIMIT_EMAIL_PER_10_MINUTES: "1000",
    RATE_LIMIT_EMAIL_CEILING_PER_HOUR: "1000",
  }
})
afterAll(async () => {
  await Promise.all(children.map(stopChild))
  await db?.end()
})

const withKeys = (keys: { current: string; previous?: string }) => ({
  ...base,
  MASTER_KEY: keys.current,
  ...(keys.previous ? { MASTER_KEY_PREVIOUS: keys.previous } : {}),
})

const startServer = async (keys: { current: string; previous?: string }) => {
  const child = await startEntry("src/main.ts", withKeys(keys), /authservice listening on/)
  children.push(child)
  return child
}
const startWorker = async (keys: { current: string; previous?: string }) => {
  const child = await startEntry("src/worker.ts", withKeys(keys), /worker: running/)
  children.push(child)
  return child
}

const rotate = () => runCliJson(["master-key", "rotate"], withKeys({ current: B, previous: A }))

/** The rotation's whole state: the key check, its progress, and the key id of every sealed value. */
const rotationState = async () => ({
  check: (await db.query("select check_value, previous_check_value, old_key_needed_until from master_key_check")).rows,
  progress: (await db.query("select count(*)::int as n from master_key_rotation_progress")).rows[0].n as number,
  // Lasting sealed values with their key ids (queued mail jobs come and go as the worker sends them).
  sealedUnder: (
    await db.query(`select 'signing_keys/' || kid || '/' || split_part(private_key_sealed, '.', 2) as k from signing_keys
    union all select 'hmac_data_keys/' || purpose || '/' || split_part(key_sealed, '.', 2) from hmac_data_keys order by 1`)
  ).rows.map((r: { k: string }) => r.k),
  /** Key ids of every sealed value, the queued jobs' included. */
  keyIds: new Set(
    (
      await db.query(`select split_part(private_key_sealed, '.', 2) as k from signing_keys
    union all select split_part(key_sealed, '.', 2) from hmac_data_keys
    union all select split_part(j.payload->>'sealed', '.', 2) from graphile_worker._private_jobs j where j.payload->>'sealed' is not null`)
    ).rows.map((r: { k: string }) => r.k),
  ),
})

/** The state without the queued jobs, which the worker consumes meanwhile. */
const lasting = async () => {
  const { keyIds, ...rest } = await rotationState()
  return { ...rest, underB: keyIds.has(idB) }
}

const heartbeats = async () =>
  (
    await db.query<{ kind: string; master_key_id: string; previous_master_key_id: string | null }>(
      "select kind, master_key_id, previous_master_key_id from process_heartbeats order by kind, master_key_id",
    )
  ).rows

interface Setup {
  management: string
  interaction: string
  apiKey: string
  clientId: string
  redirectUri: string
}
let setup: Setup

/** A new login transaction and its Email OTP start, as a login page does it: 202 when the server works. */
const emailStart = async () => {
  const verifier = randomBytes(32).toString("base64url")
  const created = await call(port, setup.interaction, "/v1/auth/transactions", {
    method: "POST",
    body: {
      client_id: setup.clientId,
      redirect_uri: setup.redirectUri,
      code_challenge_method: "S256",
      state: "s-1",
      nonce: "n-1",
      code_challenge: createHash("sha256").update(verifier).digest("base64url"),
      scope: "openid email",
    },
  })
  expect(created.status, created.text).toBe(201)
  const txn = JSON.parse(created.text).transaction_id as string
  return call(port, setup.interaction, `/v1/auth/transactions/${txn}/email/start`, {
    method: "POST",
    body: { email: `rotation.${randomBytes(4).toString("hex")}@example.com` },
  })
}

describe("master-key rotate waits for every live process to hold both keys", () => {
  it("refused while a server or worker runs without the new key (nothing re-sealed, the server keeps answering); completes once all hold both; a dead process's stale heartbeat stops counting", async () => {
    // --- The service runs on A: a server and a worker. -------------------------------------------------
    const [server1, worker1] = await Promise.all([startServer({ current: A }), startWorker({ current: A })])
    const boot = await runCliJson(["bootstrap"], withKeys({ current: A }))
    expect(boot.code, boot.stderr).toBe(0)
    const redirectUri = "http://127.0.0.1:4999/callback"
    const client = await call(port, `api.localhost:${port}`, "/v1/clients", {
      method: "POST",
      headers: { authorization: `Bearer ${boot.json!["api_key"]}` },
      body: {
        environment_id: boot.json!["environment_id"],
        client_type: "web_spa",
        name: "Rotation SPA",
        token_endpoint_auth_method: "none",
        redirect_uris: [redirectUri],
        allowed_scopes: ["openid", "email"],
      },
    })
    expect(client.status, client.text).toBe(201)
    setup = {
      management: `api.localhost:${port}`,
      interaction: boot.json!["interaction_domain"],
      apiKey: boot.json!["api_key"],
      clientId: JSON.parse(client.text).id,
      redirectUri,
    }
    expect((await emailStart()).status).toBe(202)
    // Both processes are listed with the key they hold (the bootstrap command removed its own row).
    expect(await heartbeats()).toEqual([
      { kind: "server", master_key_id: idA, previous_master_key_id: null },
      { kind: "worker", master_key_id: idA, previous_master_key_id: null },
    ])
    const before = await lasting()
    expect(before.sealedUnder.length).toBeGreaterThanOrEqual(2)
    expect(before.sealedUnder.every((k) => k.endsWith(`/${idA}`))).toBe(true)
    expect(before.underB).toBe(false)

    // --- Step 3 before step 2: refused, nothing changes, the server still works. ------------------------
    const early = await rotate()
    expect(early.code).toBe(1)
    expect(early.stdout).toBe("")
    const line = early.stderr.trim()
    expect(line.split("\n")).toHaveLength(1)
    expect(line).toMatch(
      new RegExp(
        `^authservice cli: Refused, nothing re-sealed: 1 server process and 1 worker process run without MASTER_KEY=<new> \\(key id ${idB}\\) and MASTER_KEY_PREVIOUS=<old> \\(key id ${idA}\\): `,
      ),
    )
    expect(line).toContain(`server on ${hostname()} (pid `)
    expect(line).toContain(`with MASTER_KEY ${idA} only`)
    expect(line).toContain("Restart every server and worker with both keys (docs/master-key-rotation.md, step 2)")
    expect(line).toContain("stops counting 120 s after its last heartbeat")
    expect(await lasting()).toEqual(before)
    const still = await emailStart()
    expect(still.status, still.text).toBe(202)
    // Another command holding both keys runs, and seals under the old key (nothing has switched).
    const other = await runCliJson(["bootstrap"], withKeys({ current: B, previous: A }))
    expect(other.code, other.stderr).toBe(0)
    const expanded = await lasting()
    expect(expanded.sealedUnder.length).toBeGreaterThan(before.sealedUnder.length)
    expect(expanded.sealedUnder.every((k) => k.endsWith(`/${idA}`))).toBe(true)
    expect([expanded.check, expanded.progress, expanded.underB]).toEqual([before.check, 0, false])

    // --- Step 2 half done: the server restarted with both keys (sealing under A), the worker not. ------
    await stopChild(server1)
    const server2 = await startServer({ current: B, previous: A })
    expect((await emailStart()).status).toBe(202)
    const half = await rotate()
    expect(half.code).toBe(1)
    expect(half.stderr).toMatch(
      /^authservice cli: Refused, nothing re-sealed: 1 worker process runs without MASTER_KEY=<new>/,
    )
    expect(half.stderr).toContain(`worker on ${hostname()} (pid `)
    // Refused before the switch: nothing changed (the restarted server seals under A).
    const half2 = await lasting()
    expect([half2.check, half2.progress, half2.underB]).toEqual([before.check, 0, false])
    expect(half2.sealedUnder.every((k) => k.endsWith(`/${idA}`))).toBe(true)

    // --- The old worker dies without shutting down (its row stays, fresh); a new one starts with both keys.
    killGroup(worker1, "SIGKILL")
    await worker1.exited
    await startWorker({ current: B, previous: A })
    const dead = await rotate()
    expect(dead.code).toBe(1)
    expect(dead.stderr).toMatch(/Refused, nothing re-sealed: 1 worker process runs without MASTER_KEY=<new>/)
    expect((await rotationState()).progress).toBe(0)
    expect((await rotationState()).check).toEqual(before.check)
    // Two minutes of silence later (the database's clock decides), the dead worker no longer counts.
    await db.query(
      `update process_heartbeats set beat_at = now() - interval '121 seconds'
      where master_key_id = $1 and previous_master_key_id is null`,
      [idA],
    )

    const done = await rotate()
    expect(done.code, done.stderr).toBe(0)
    expect(done.json).toMatchObject({ from_key_id: idA, to_key_id: idB, completed: true, remaining: {} })
    const after = await rotationState()
    expect(after.keyIds).toEqual(new Set([idB]))
    expect(after.check[0].previous_check_value).toBeNull()

    // --- The service keeps working: the server (both keys) answers as before. ----------------------------
    const afterwards = await emailStart()
    expect(afterwards.status, afterwards.text).toBe(202)
    const workspace = await call(port, setup.management, `/v1/workspaces/${boot.json!["workspace_id"]}`, {
      headers: { authorization: `Bearer ${setup.apiKey}` },
    })
    expect(workspace.status, workspace.text).toBe(200)
    // The new worker opens what the server sealed under B: that login code's mail is sent (its job done).
    const challenge = JSON.parse(afterwards.text).challenge_id as string
    await until(
      "the login code mail to be sent",
      async () =>
        (
          await db.query(
            `select count(*)::int as n from graphile_worker._private_jobs j
      join graphile_worker._private_tasks t on t.id = j.task_id where t.identifier = 'send_login_code' and j.payload->>'challenge_id' = $1`,
            [challenge],
          )
        ).rows[0].n === 0
          ? true
          : undefined,
      30_000,
    )
    // The reverse mistake: a process with the new key alone is refused for the ten minutes after completion.
    const newOnly = await runEntry("src/main.ts", [], { ...withKeys({ current: B }), PORT: String(await freePort()) })
    expect(newOnly.code).toBe(1)
    expect(newOnly.stderr).toMatch(
      /^authservice: The master-key rotation completed, but Email OTP codes and social login states made under the old key verify only with it until .*keep MASTER_KEY_PREVIOUS set to the old key until then \(step 4\)\n$/,
    )
    expect((await call(port, setup.management, "/readyz")).status).toBe(200)
    void server2
  }, 300_000)
})
