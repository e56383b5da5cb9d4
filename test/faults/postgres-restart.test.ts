import { spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest"
import { loadEmbeddedPostgres } from "../../src/platform/embedded-postgres.js"
import { freePort } from "../../src/platform/free-port.js"
import { createClient, createUser, form, mintCode, type MintedCode, type TestClient } from "../oidc/support.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { type Answer, call, type Child, startEntry, stopChild, until } from "./support.js"

// Postgres restarts (and freezes) under load, with a real server process and a real worker
// process: requests during the outage answer 503 (Problem Details, or the OAuth error
// `server_error` on the token endpoint) within a bounded time (never 500, never a hang), both
// processes recover by themselves when Postgres is back, and nothing is lost: every user whose
// creation answered 201 exists and its user.created event reaches the webhook receiver at least
// once (exactly one delivery record per subscription and event); an authorization code is
// either exchanged once or still unused, and a refresh family is never rotated twice for one
// request. A freeze (SIGSTOP of every Postgres process: the kernel still acknowledges, so only
// the statement and connect bounds can end the wait) is answered within those bounds.

/** The bounds both processes run with here (production defaults: 5 s and 15 s). */
const CONNECT_TIMEOUT_MS = 2_000
const STATEMENT_TIMEOUT_MS = 2_000
/**
 * Longest answer allowed: a frozen statement is abandoned at STATEMENT_TIMEOUT_MS, then
 * @effect/sql-pg waits up to 5 s for its cancellation before closing the connection.
 */
const ANSWER_BOUND_MS = STATEMENT_TIMEOUT_MS + 5_000 + 3_000

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
    databaseDir: join(dir, "pg"),
    port: pgPort,
    user: "postgres",
    password: "postgres",
    persistent: true,
    createPostgresUser: true,
    onLog: () => {},
    onError: () => {},
    initdbFlags: ["--encoding=UTF8", "--no-sync"],
    postgresFlags: ["-c", "fsync=off"],
  })
  await postgres.initialise()
  await postgres.start()
  databaseUrl = `postgres://postgres:postgres@127.0.0.1:${pgPort}/postgres`

  receiver = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const envelope = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
        eventId: string
        payload: { userId: string }
      }
      received.push({ userId: envelope.payload.userId, eventId: envelope.eventId })
      res.writeHead(204).end()
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))

  port = await freePort()
  env = {
    DATABASE_URL: databaseUrl,
    MASTER_KEY: randomBytes(32).toString("base64url"),
    PORT: String(port),
    DATA_DIR: join(dir, "data"),
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    WORKER_CONCURRENCY: "8",
    RATE_LIMIT_IP_PER_MINUTE: "100000",
    RATE_LIMIT_CLIENT_PER_MINUTE: "100000",
    DATABASE_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
    DATABASE_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
  }
  server = await startEntry("src/main.ts", env, /authservice listening on/)
  worker = await startEntry("src/worker.ts", env, /worker: running/)

  // A Workspace, an Environment and a key, through the operator command against the same database.
  const boot = spawnSync(join(process.cwd(), "node_modules/.bin/tsx"), ["src/cli.ts", "bootstrap", "--json"], {
    env: { PATH: process.env["PATH"]!, HOME: process.env["HOME"] ?? "/root", ...env },
    encoding: "utf8",
  })
  expect(boot.status, boot.stderr).toBe(0)
  b = JSON.parse(boot.stdout) as Bootstrapped
  const hook = await call(port, management(), "/v1/webhooks", {
    method: "POST",
    headers: auth(),
    body: {
      environment_id: b.environment_id,
      url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`,
      event_types: ["user.created"],
    },
  })
  expect(hook.status, hook.text).toBe(201)
  // The application's own services on the same database, for the token-side fixtures (clients, codes).
  app = await startApp({ databaseUrl, env: { MASTER_KEY: env["MASTER_KEY"]! } })
  client = await createClient(app, b)
}, 180_000)

// Codes minted by this process are checked by child processes on real time.
beforeEach(() => app.catchUpWithWallClock())

afterAll(async () => {
  signalPostgres("SIGCONT") // never leave it frozen
  await app?.close()
  if (server) await stopChild(server)
  if (worker) await stopChild(worker)
  receiver?.close()
  await postgres?.stop().catch(() => {})
  if (dir) rmSync(dir, { recursive: true, force: true })
}, 60_000)

let b: Bootstrapped
let app: TestApp
let client: TestClient
const auth = () => ({ authorization: `Bearer ${b.api_key}` })
const issuerHost = () => `localhost:${port}`

/** Every process of the Postgres server: the postmaster (from its pid file) and its children. */
const postgresPids = () => {
  const master = Number(readFileSync(join(dir, "pg", "postmaster.pid"), "utf8").split("\n")[0])
  const children = readdirSync("/proc")
    .filter((e) => /^\d+$/.test(e))
    .flatMap((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
        return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === master ? [Number(pid)] : []
      } catch {
        return []
      }
    })
  return { master, children }
}

function signalPostgres(signal: "SIGSTOP" | "SIGCONT") {
  if (!dir) return
  try {
    const { master, children } = postgresPids()
    // Stopped: the postmaster first (no new backend is forked meanwhile); resumed: it last.
    const order = signal === "SIGSTOP" ? [master, ...children] : [...children, master]
    for (const pid of order) {
      try {
        process.kill(pid, signal)
      } catch {
        // gone
      }
    }
  } catch {
    // not running
  }
}

type Attempt = Answer & { readonly kind: "user" | "code" | "refresh"; readonly label: string }

/** Users created one after another by `loops` loops, each with an Idempotency-Key, until stopped. */
const userLoad = (tag: string, loops = 4) => {
  const answers: Array<Attempt> = []
  let stop = false
  let n = 0
  const loop = async () => {
    while (!stop) {
      const email = `${tag}${n++}@load.example.com`
      const a = await call(port, management(), `/v1/users?environment_id=${b.environment_id}`, {
        method: "POST",
        headers: { ...auth(), "idempotency-key": email },
        body: { environment_id: b.environment_id, email },
      })
      answers.push({ ...a, kind: "user", label: email })
    }
  }
  const running = Promise.all(Array.from({ length: loops }, loop))
  return {
    answers,
    stop: async () => {
      stop = true
      await running
    },
  }
}

const token = (params: Record<string, string>) =>
  call(port, issuerHost(), `/e/${b.environment_id}/oauth2/token`, {
    method: "POST",
    rawBody: form({ ...params, client_id: client.id }),
    headers: { "content-type": "application/x-www-form-urlencoded" },
  })
const exchange = (minted: MintedCode) =>
  token({
    grant_type: "authorization_code",
    code: minted.code,
    code_verifier: minted.verifier,
    redirect_uri: client.redirectUri,
  })

/** Never a 500, never a hang: each answer is a success or a 503 in the endpoint's error format, within the bound. */
const expectOnlySuccessOr503 = (answers: ReadonlyArray<Attempt>) => {
  for (const a of answers) {
    expect(a.ms, `${a.kind} ${a.label} took ${a.ms} ms`).toBeLessThan(ANSWER_BOUND_MS)
    if (a.status === 503) {
      if (a.kind === "user") {
        expect(a.headers["content-type"]).toContain("application/problem+json")
        expect(JSON.parse(a.text).code).toBe("service_unavailable")
      } else {
        expect(JSON.parse(a.text).error, a.text).toBe("server_error")
      }
    } else {
      expect(a.status, `${a.kind} ${a.label}: ${a.status} ${a.text}`).toBe(a.kind === "user" ? 201 : 200)
    }
  }
}

/** Nothing lost: every 201 user exists and its event reaches the receiver at least once; one first attempt per event. */
const expectEveryUserDelivered = async (answers: ReadonlyArray<Attempt>) => {
  const db = new pg.Client({ connectionString: databaseUrl })
  await db.connect()
  try {
    const users = (
      await db.query<{ id: string; email: string }>("select id, email from users where environment_id = $1", [
        b.environment_id,
      ])
    ).rows
    const emails = new Set(users.map((u) => u.email))
    for (const a of answers.filter((x) => x.kind === "user" && x.status === 201))
      expect(emails.has(a.label), a.label).toBe(true)
    expect(users.length).toBe(emails.size)
    // Every user in the database (a 503 may hide a commit) gets its event too.
    await until(
      "every user's event at the receiver",
      async () => {
        const seen = new Set(received.map((r) => r.userId))
        return users.every((u) => seen.has(u.id)) ? true : undefined
      },
      90_000,
      250,
    ).catch(async (e) => {
      const seen = new Set(received.map((r) => r.userId))
      console.log("missing:", users.filter((u) => !seen.has(u.id)).length, "of", users.length)
      console.log(
        (await db.query("select status, attempt, failure_reason, count(*)::int from webhook_deliveries group by 1,2,3"))
          .rows,
      )
      console.log(
        (
          await db.query(
            "select task_identifier, locked_by, attempts, last_error, count(*)::int from graphile_worker.jobs group by 1,2,3,4",
          )
        ).rows,
      )
      console.log("worker output:", worker!.output().slice(-3000))
      // When each job was locked and by which pool, beside when each runner was lost and whose ids
      // were released: a job locked by a released pool after its release is an orphan.
      console.log(
        (await db.query("select id, locked_at, locked_by, created_at, attempts from graphile_worker.jobs")).rows,
      )
      console.log(
        "worker runners:",
        worker!
          .output()
          .split("\n")
          .filter((line) => /runner|released|'(pool|worker)-/.test(line))
          .join("\n"),
      )
      throw e
    })
    const doubled = (
      await db.query(
        "select event_id from webhook_deliveries where attempt = 1 group by event_id, webhook_id having count(*) > 1",
      )
    ).rows
    expect(doubled).toEqual([])
  } finally {
    await db.end()
  }
}

it("requests during a Postgres restart answer 503 quickly; server and worker recover; no event or grant is lost or doubled", async () => {
  // Grants to spend across the outage: codes (60-second lifetime: minted just before) and refresh families.
  await app.advance(Date.now() - app.now())
  const user = await createUser(app, b)
  const codes = await Promise.all(Array.from({ length: 30 }, () => mintCode(app, b, client, user)))
  const families: Array<{ token: string; generation: number; certain: boolean }> = []
  for (const minted of await Promise.all(Array.from({ length: 6 }, () => mintCode(app, b, client, user)))) {
    const first = await exchange(minted)
    expect(first.status, first.text).toBe(200)
    families.push({ token: JSON.parse(first.text).refresh_token, generation: 1, certain: true })
  }

  const load = userLoad("restart")
  await until(
    "some users created",
    async () => (load.answers.filter((a) => a.status === 201).length >= 20 ? true : undefined),
    30_000,
  )

  // The token endpoint under the same outage: each code exchanged once (a retry of a code whose
  // exchange may have committed would be a replay), each family refreshed while its answers are known.
  const oauth: Array<Attempt & { code?: MintedCode }> = []
  let oauthStop = false
  const oauthLoop = (async () => {
    let i = 0
    while (!oauthStop) {
      const minted = i % 2 === 0 ? codes[i / 2] : undefined
      if (minted !== undefined) {
        const a = await exchange(minted)
        oauth.push({ ...a, kind: "code", label: `code ${i / 2}`, code: minted })
      } else {
        const f = families.filter((x) => x.certain)[i % families.length]
        if (f) {
          const a = await token({ grant_type: "refresh_token", refresh_token: f.token })
          oauth.push({ ...a, kind: "refresh", label: `refresh gen ${f.generation}` })
          if (a.status === 200) {
            f.token = JSON.parse(a.text).refresh_token
            f.generation++
          } else {
            f.certain = false // rotated or not: the answer was lost
          }
        }
      }
      i++
      if (i >= codes.length * 2) break
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  })()

  // The outage.
  const outageStarts = load.answers.length
  await postgres.stop()
  await until(
    "requests during the outage",
    async () => (load.answers.slice(outageStarts).filter((a) => a.status === 503).length >= 10 ? true : undefined),
    30_000,
  )
  await new Promise((resolve) => setTimeout(resolve, 1_000))
  await postgres.start()
  const restartedAt = load.answers.length
  await until(
    "the server to recover",
    async () => (load.answers.slice(restartedAt).filter((a) => a.status === 201).length >= 20 ? true : undefined),
    60_000,
  )
  await load.stop()
  oauthStop = true
  await oauthLoop

  expectOnlySuccessOr503([...load.answers, ...oauth])
  expect(
    oauth.some((a) => a.status === 503),
    "some token requests met the outage",
  ).toBe(true)
  expect((await call(port, management(), "/readyz")).status).toBe(200)

  // Codes: each exchanged once or still unused. A code answered 503 and unused is exchanged now.
  const db = new pg.Client({ connectionString: databaseUrl })
  await db.connect()
  try {
    const state = async (minted: MintedCode) =>
      (
        await db.query<{ consumed: boolean; family: string | null }>(
          "select consumed_at is not null as consumed, refresh_family_id as family from authorization_codes where code_hash = encode(sha256(convert_to($1, 'UTF8')), 'hex')",
          [minted.code],
        )
      ).rows[0]
    for (const a of oauth.filter((x) => x.kind === "code")) {
      const before = await state(a.code!)
      expect(before, a.label).toBeDefined()
      if (a.status === 200) expect(before!.consumed).toBe(true)
      else if (!before!.consumed) {
        const again = await exchange(a.code!)
        expect(again.status, again.text).toBe(200)
      }
      const after = await state(a.code!)
      expect(after!.consumed).toBe(true)
      expect(after!.family).not.toBeNull()
    }
    // One family per exchanged code (never two for one code), none revoked by a replay.
    const grants = (
      await db.query<{ families: number; codes: number; revoked: number }>(
        `select
        (select count(*)::int from refresh_families where client_id = $1) as families,
        (select count(*)::int from authorization_codes where client_id = $1 and consumed_at is not null) as codes,
        (select count(*)::int from refresh_families where client_id = $1 and revoked_at is not null) as revoked`,
        [client.id],
      )
    ).rows[0]!
    expect(grants.families).toBe(grants.codes)
    expect(grants.revoked).toBe(0)
    // Refresh families: rotated once per answered refresh; one whose answer was lost at most once more.
    for (const f of families) {
      const [id, generation] = f.token.replace(/^rt_/, "").split(".")
      const row = (
        await db.query<{ generation: number }>("select generation from refresh_families where id = $1", [id])
      ).rows[0]!
      expect(Number(generation)).toBe(f.generation)
      expect(row.generation - f.generation, `family ${id}`).toBeLessThanOrEqual(f.certain ? 0 : 1)
      expect(row.generation).toBeGreaterThanOrEqual(f.generation)
      if (f.certain) {
        const next = await token({ grant_type: "refresh_token", refresh_token: f.token })
        expect(next.status, next.text).toBe(200)
      }
    }
  } finally {
    await db.end()
  }
  await expectEveryUserDelivered(load.answers)
}, 240_000)

it("a Postgres that freezes (no answer, connections left open) gets 503s within the statement bound, never a hang; both processes recover when it resumes", async () => {
  const user = await createUser(app, b)
  const load = userLoad("freeze")
  await until(
    "some users created",
    async () => (load.answers.filter((a) => a.status === 201).length >= 20 ? true : undefined),
    30_000,
  )
  await app.advance(Date.now() - app.now())
  const codes = await Promise.all(Array.from({ length: 4 }, () => mintCode(app, b, client, user)))

  const frozenAt = load.answers.length
  signalPostgres("SIGSTOP")
  let tokenAnswers: Array<Attempt> = []
  try {
    // Token requests while it is frozen too.
    tokenAnswers = (await Promise.all(codes.map((c) => exchange(c)))).map((a, i) => ({
      ...a,
      kind: "code" as const,
      label: `code ${i}`,
    }))
    await until(
      "requests during the freeze",
      async () => (load.answers.slice(frozenAt).filter((a) => a.status === 503).length >= 8 ? true : undefined),
      60_000,
      100,
    )
  } finally {
    signalPostgres("SIGCONT")
  }
  const resumedAt = load.answers.length
  await until(
    "the server to recover",
    async () => (load.answers.slice(resumedAt).filter((a) => a.status === 201).length >= 20 ? true : undefined),
    60_000,
  )
  await load.stop()

  expectOnlySuccessOr503([...load.answers, ...tokenAnswers])
  expect(tokenAnswers.every((a) => a.status === 503)).toBe(true)
  expect(Math.max(...load.answers.slice(frozenAt, resumedAt).map((a) => a.ms))).toBeGreaterThan(
    STATEMENT_TIMEOUT_MS - 500,
  )
  expect((await call(port, management(), "/readyz")).status).toBe(200)
  // The frozen codes were never exchanged: they still are, once.
  for (const c of codes) expect((await exchange(c)).status).toBe(200)
  await expectEveryUserDelivered(load.answers)
  expect(worker!.process.exitCode).toBeNull()
  expect(server!.process.exitCode).toBeNull()
}, 240_000)
