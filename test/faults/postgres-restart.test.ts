import { spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { chmodSync, mkdtempSync, rmSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import { afterAll, beforeAll, expect, it } from "vitest"
import { freePort, loadEmbeddedPostgres } from "../../src/platform/embedded-postgres.js"
import { type Answer, call, type Child, startEntry, stopChild, until } from "./support.js"

// Postgres restarts under load, with a real server process and a real worker process:
// requests during the outage answer 503 Problem Details within a bounded time (never 500,
// never a hang), both processes recover by themselves when Postgres is back, and nothing is
// lost: every user whose creation answered 201 exists and its user.created event reaches the
// webhook receiver at least once (exactly one delivery record per subscription and event).

let dir: string
let postgres: InstanceType<Awaited<ReturnType<typeof loadEmbeddedPostgres>>>
let databaseUrl: string
let server: Child | undefined
let worker: Child | undefined
let receiver: Server
const received: Array<{ userId: string; eventId: string }> = []

const management = () => `api.localhost:${port}`
let port: number
let env: Record<string, string>

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "authservice-faults-"))
  chmodSync(dir, 0o755) // the postgres OS user (we are root) must reach its data directory
  const pgPort = await freePort()
  const EmbeddedPostgres = await loadEmbeddedPostgres() // without its process exit hooks
  postgres = new EmbeddedPostgres({
    databaseDir: join(dir, "pg"), port: pgPort, user: "postgres", password: "postgres", persistent: true,
    createPostgresUser: true, onLog: () => {}, onError: () => {},
    initdbFlags: ["--encoding=UTF8", "--no-sync"], postgresFlags: ["-c", "fsync=off"],
  })
  await postgres.initialise()
  await postgres.start()
  databaseUrl = `postgres://postgres:postgres@127.0.0.1:${pgPort}/postgres`

  receiver = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const envelope = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { eventId: string; payload: { userId: string } }
      received.push({ userId: envelope.payload.userId, eventId: envelope.eventId })
      res.writeHead(204).end()
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))

  port = await freePort()
  env = {
    DATABASE_URL: databaseUrl, MASTER_KEY: randomBytes(32).toString("base64url"), PORT: String(port),
    DATA_DIR: join(dir, "data"), WEBHOOK_ALLOW_PRIVATE_TARGETS: "true", WORKER_CONCURRENCY: "8",
    RATE_LIMIT_IP_PER_MINUTE: "100000",
  }
  server = await startEntry("src/main.ts", env, /authservice listening on/)
  worker = await startEntry("src/worker.ts", env, /worker: running/)
}, 120_000)

afterAll(async () => {
  if (server) await stopChild(server)
  if (worker) await stopChild(worker)
  receiver?.close()
  await postgres?.stop().catch(() => {})
  if (dir) rmSync(dir, { recursive: true, force: true })
}, 60_000)

it("requests during a Postgres restart answer 503 quickly; server and worker recover; no event is lost", async () => {
  // A Workspace, an Environment and a key, through the operator command against the same database.
  const boot = spawnSync(join(process.cwd(), "node_modules/.bin/tsx"), ["src/cli.ts", "bootstrap", "--json"], {
    env: { PATH: process.env["PATH"]!, HOME: process.env["HOME"] ?? "/root", ...env }, encoding: "utf8",
  })
  expect(boot.status, boot.stderr).toBe(0)
  const b = JSON.parse(boot.stdout) as { api_key: string; environment_id: string; workspace_id: string }
  const auth = { authorization: `Bearer ${b.api_key}` }
  const hook = await call(port, management(), "/v1/webhooks", {
    method: "POST", headers: auth,
    body: { environment_id: b.environment_id, url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`, event_types: ["user.created"] },
  })
  expect(hook.status, hook.text).toBe(201)

  // Load: users created one after another by 4 loops, each with an Idempotency-Key, until told to stop.
  const answers: Array<Answer & { email: string }> = []
  let stop = false
  let n = 0
  const loop = async () => {
    while (!stop) {
      const email = `u${n++}@load.example.com`
      const a = await call(port, management(), `/v1/users?environment_id=${b.environment_id}`, {
        method: "POST", headers: { ...auth, "idempotency-key": email }, body: { environment_id: b.environment_id, email },
      })
      answers.push({ ...a, email })
    }
  }
  const loops = Promise.all([loop(), loop(), loop(), loop()])
  await until("some users created", async () => answers.filter((a) => a.status === 201).length >= 20 ? true : undefined, 30_000)

  // The outage.
  const outageStarts = answers.length
  await postgres.stop()
  await until("requests during the outage", async () => answers.slice(outageStarts).filter((a) => a.status === 503).length >= 10 ? true : undefined, 30_000)
  await new Promise((resolve) => setTimeout(resolve, 1_000))
  await postgres.start()
  const restartedAt = answers.length
  await until("the server to recover", async () => answers.slice(restartedAt).filter((a) => a.status === 201).length >= 20 ? true : undefined, 60_000)
  stop = true
  await loops

  // Never a 500, never a hang: every answer is 201 or a 503 Problem Details, each within 10 s.
  const statuses = new Set(answers.map((a) => a.status))
  expect([...statuses].every((s) => s === 201 || s === 503), `statuses: ${[...statuses].join(",")}`).toBe(true)
  for (const a of answers.filter((x) => x.status === 503)) {
    expect(a.headers["content-type"]).toContain("application/problem+json")
    expect(JSON.parse(a.text).code).toBe("service_unavailable")
  }
  expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(10_000)
  const health = await call(port, management(), "/readyz")
  expect(health.status).toBe(200)

  // Nothing lost: every 201 user exists and its event reaches the receiver at least once; every
  // user in the database (a 503 may hide a commit) also gets its event; one record per event.
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    const users = (await client.query<{ id: string; email: string }>("select id, email from users where environment_id = $1", [b.environment_id])).rows
    const created = answers.filter((a) => a.status === 201).map((a) => a.email)
    const emails = new Set(users.map((u) => u.email))
    for (const email of created) expect(emails.has(email), email).toBe(true)
    expect(users.length).toBe(new Set(users.map((u) => u.email)).size)
    await until("every user's event at the receiver", async () => {
      const seen = new Set(received.map((r) => r.userId))
      return users.every((u) => seen.has(u.id)) ? true : undefined
    }, 90_000, 250).catch(async (e) => {
      const seen = new Set(received.map((r) => r.userId))
      console.log("missing:", users.filter((u) => !seen.has(u.id)).length, "of", users.length)
      console.log((await client.query("select status, attempt, failure_reason, count(*)::int from webhook_deliveries group by 1,2,3")).rows)
      console.log((await client.query("select task_identifier, locked_by, attempts, last_error, count(*)::int from graphile_worker.jobs group by 1,2,3,4")).rows)
      console.log((await client.query("select count(*)::int from event_outbox where type = 'user.created'")).rows)
      console.log("worker output:", worker!.output().slice(-3000))
      throw e
    })
    const records = (await client.query<{ event_id: string; n: number }>(
      "select event_id, count(*)::int as n from webhook_deliveries where attempt = 1 group by event_id having count(*) > 1")).rows
    expect(records).toEqual([])
  } finally {
    await client.end()
  }
}, 240_000)

