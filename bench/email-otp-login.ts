// The full Email OTP login, as a custom UI and its app run it, at 32 concurrent virtual users:
// create a login transaction (Public Authentication API), start Email OTP, wait for the mail at a
// real SMTP server on loopback (sent by the worker through graphile-worker), verify the code,
// complete, and exchange the authorization code at /oauth2/token (public client, PKCE S256).
// Every user loops over that for BENCH_SECONDS; logins/s, p50/p99 per step and for the whole
// login, and CPU per login of the server, the worker and Postgres (each its own process tree,
// from /proc) are printed (docs/decisions/performance.md, "Email OTP login").
//
// Started as users start it: embedded Postgres, `src/main.ts` (the server) and `src/worker.ts`
// (the worker) as separate processes, SMTP_URL pointing at the sink in this process. Rate limits
// raised out of the way (BENCH_RATE_LIMITS: still counted, never reached).
//
// Run: npx tsx bench/email-otp-login.ts   (not part of the suite)
// Knobs: BENCH_SECONDS (20), BENCH_USERS (32), BENCH_ROUNDS (1; medians reported), BENCH_NEW_USERS=1
// (every login a new address, so verify creates a user; default: each virtual user signs in
// again with its own address, a returning user after its first login), BENCH_PROFILE=1 (server
// and worker under --cpu-prof, profiles in /tmp/authservice-otp-prof), BENCH_PG_STATS=1
// (pg_stat_statements: the statements by total time after the run; `all`: nested ones too), BENCH_SMTP_URL_QUERY
// (appended to SMTP_URL, e.g. "pool=true").
//
// Measured (2 cores shared with other work at load averages 4-17; docs/decisions/performance.md,
// "Email OTP login", has every run): quietest runs, returning users, p50 ms per step:
//   before: 49.6 logins/s (load 7-9); transaction 80, start 125, mail 122, verify 128, complete 73,
//           code exchange 56, login 593 (p99 1,011); CPU ms per login: server 12.5, worker 4.9,
//           Postgres 10.7, this process 2.9; 58 statements per login.
//   after:  59.9 logins/s against 53.2 before in a pair at load 4; p50 mail 13 (123 before), login 527
//           (603); CPU ms per login: server 11.4 (13.1), worker 4.1 (5.0), Postgres 10.4 (11.2), this
//           process 2.2 (3.0); 48 statements per login. The issue's target (3 x 38 = 114 logins/s)
//           needs at most 17.5 ms of CPU per login on 2 cores for everything: not reached.
import { type ChildProcess, spawn } from "node:child_process"
import { createHash, randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { Agent, request as httpRequest } from "node:http"
import type { AddressInfo } from "node:net"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import { SMTPServer } from "smtp-server"
import { startEmbeddedPostgres } from "../src/platform/embedded-postgres.js"
import { freePort } from "../src/platform/free-port.js"
import {
  AS_DEPLOYED,
  BENCH_RATE_LIMITS,
  bootstrap,
  machineCpuSeconds,
  machineShares,
  postmasterPid,
  stopChild,
  treeCpuSeconds,
  waitFor,
} from "./support.js"

const SECONDS = Number(process.env["BENCH_SECONDS"] ?? 20)
const USERS = Number(process.env["BENCH_USERS"] ?? 32)
const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 1)
const NEW_USERS = process.env["BENCH_NEW_USERS"] === "1"
const PROFILE = process.env["BENCH_PROFILE"] === "1"
const PG_STATS = process.env["BENCH_PG_STATS"] === "1" || process.env["BENCH_PG_STATS"] === "all"
const PROFILE_DIR = "/tmp/authservice-otp-prof"
const TSX = join(process.cwd(), "node_modules/.bin/tsx")
const REDIRECT = "http://127.0.0.1:4999/callback"
const STEPS = ["transaction", "start", "mail", "verify", "complete", "token", "login"] as const
type Step = (typeof STEPS)[number]

const load1 = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")

// ---------------------------------------------------------------------------------------------
// HTTP: keep-alive sockets, one per virtual user, an explicit Host (the server picks its surface by it).
// ---------------------------------------------------------------------------------------------
const agent = new Agent({ keepAlive: true, maxSockets: USERS * 2 })
interface Answer {
  readonly status: number
  readonly json: any
  readonly text: string
}
const send = (
  port: number,
  host: string,
  path: string,
  body?: { json?: unknown; form?: string },
  headers: Record<string, string> = {},
) =>
  new Promise<Answer>((resolve, reject) => {
    const text = body?.json !== undefined ? JSON.stringify(body.json) : body?.form
    const all: Record<string, string> = { host, ...headers }
    if (text !== undefined) {
      all["content-type"] = body?.form !== undefined ? "application/x-www-form-urlencoded" : "application/json"
      all["content-length"] = String(Buffer.byteLength(text))
    }
    const req = httpRequest({ host: "127.0.0.1", port, path, method: "POST", headers: all, agent }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => {
        const t = Buffer.concat(chunks).toString("utf8")
        let json: unknown
        try {
          json = t === "" ? undefined : JSON.parse(t)
        } catch {
          json = undefined
        }
        resolve({ status: res.statusCode ?? 0, json, text: t })
      })
    })
    req.on("error", reject)
    if (text !== undefined) req.write(text)
    req.end()
  })

// ---------------------------------------------------------------------------------------------
// The SMTP sink: a real SMTP server on loopback; each mail's code is handed to whoever waits for
// that address (or kept until someone does: the mail may arrive before the start's answer).
// ---------------------------------------------------------------------------------------------
const startSink = async () => {
  const waiting = new Map<string, (code: string) => void>()
  const arrived = new Map<string, string>()
  let mails = 0
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Array<Buffer> = []
      stream.on("data", (c: Buffer) => chunks.push(c))
      stream.on("end", () => {
        mails++
        const code = /sign-in code is (\d{6})/.exec(Buffer.concat(chunks).toString("utf8"))?.[1]
        for (const r of session.envelope.rcptTo || []) {
          if (code === undefined) continue
          const to = r.address.toLowerCase()
          const waiter = waiting.get(to)
          if (waiter) {
            waiting.delete(to)
            waiter(code)
          } else arrived.set(to, code)
        }
        callback()
      })
    },
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  const port = (server.server.address() as AddressInfo).port
  const codeFor = (to: string, timeoutMs = 30_000) =>
    new Promise<string>((resolve, reject) => {
      const key = to.toLowerCase()
      const code = arrived.get(key)
      if (code !== undefined) {
        arrived.delete(key)
        return resolve(code)
      }
      const timer = setTimeout(() => {
        waiting.delete(key)
        reject(new Error(`no mail to ${to} within ${timeoutMs} ms`))
      }, timeoutMs)
      waiting.set(key, (c) => {
        clearTimeout(timer)
        resolve(c)
      })
    })
  return {
    url: `smtp://127.0.0.1:${port}`,
    codeFor,
    mails: () => mails,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

// ---------------------------------------------------------------------------------------------
// The processes: embedded Postgres (pg_stat_statements preloaded with BENCH_PG_STATS=1), the
// server and the worker.
// ---------------------------------------------------------------------------------------------
const startPostgres = async () => {
  const dir = mkdtempSync(join(tmpdir(), "authservice-otp-bench-"))
  let pgServer = await startEmbeddedPostgres(dir, { persistent: true })
  if (PG_STATS) {
    const c = new pg.Client({ connectionString: pgServer.url })
    await c.connect()
    await c.query("alter system set shared_preload_libraries = 'pg_stat_statements'")
    // Planning time too: a statement planned again on every call shows plans = calls.
    await c.query("alter system set pg_stat_statements.track_planning = on")
    // BENCH_PG_STATS=all: the statements inside functions too (graphile-worker's add_job).
    if (process.env["BENCH_PG_STATS"] === "all") await c.query("alter system set pg_stat_statements.track = 'all'")
    await c.end()
    await pgServer.stop()
    pgServer = await startEmbeddedPostgres(dir, { persistent: true })
    const c2 = new pg.Client({ connectionString: pgServer.url })
    await c2.connect()
    await c2.query("create extension if not exists pg_stat_statements")
    await c2.end()
  }
  return {
    url: pgServer.url,
    postmaster: postmasterPid(join(dir, "postgres")),
    stop: async () => {
      await pgServer.stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

const spawnEntry = (entry: string, env: Record<string, string>) =>
  spawn(TSX, [entry], {
    env: PROFILE ? { ...env, NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${PROFILE_DIR}` } : env,
    stdio: ["ignore", process.env["BENCH_SERVER_LOG"] ? "inherit" : "ignore", "inherit"],
  })

/** Waits until the worker's heartbeat row exists (its runner is up and LISTENing). */
const waitForWorker = async (databaseUrl: string) => {
  const c = new pg.Client({ connectionString: databaseUrl })
  await c.connect()
  try {
    for (let i = 0; i < 300; i++) {
      const { rows } = await c.query("select count(*)::int as n from worker_heartbeats").catch(() => ({ rows: [] }))
      if ((rows[0] as { n?: number } | undefined)?.n) return
      await new Promise((r) => setTimeout(r, 200))
    }
    throw new Error("the worker did not start")
  } finally {
    await c.end()
  }
}

// ---------------------------------------------------------------------------------------------
// One login, step by step.
// ---------------------------------------------------------------------------------------------
interface Ctx {
  readonly port: number
  readonly interactionHost: string
  readonly issuerHost: string
  readonly environmentId: string
  readonly clientId: string
  readonly sink: Awaited<ReturnType<typeof startSink>>
}

const expectStatus = (step: string, res: Answer, status: number) => {
  if (res.status !== status) throw new Error(`${step}: ${res.status} ${res.text.slice(0, 300)}`)
}

const oneLogin = async (ctx: Ctx, email: string, times: Record<Step, Array<number>>) => {
  const verifier = randomBytes(32).toString("base64url")
  const challenge = createHash("sha256").update(verifier).digest("base64url")
  const t0 = performance.now()
  let t = t0
  const lap = (step: Step) => {
    const now = performance.now()
    times[step].push(now - t)
    t = now
  }
  const txn = await send(ctx.port, ctx.interactionHost, "/v1/auth/transactions", {
    json: {
      client_id: ctx.clientId,
      redirect_uri: REDIRECT,
      code_challenge: challenge,
      code_challenge_method: "S256",
      state: randomBytes(8).toString("hex"),
      nonce: randomBytes(8).toString("hex"),
      scope: "openid email",
    },
  })
  expectStatus("transaction", txn, 201)
  const id = txn.json.transaction_id as string
  lap("transaction")
  const mail = ctx.sink.codeFor(email)
  const started = await send(ctx.port, ctx.interactionHost, `/v1/auth/transactions/${id}/email/start`, {
    json: { email },
  })
  expectStatus("start", started, 202)
  lap("start")
  const code = await mail
  lap("mail")
  const verified = await send(ctx.port, ctx.interactionHost, `/v1/auth/transactions/${id}/email/verify`, {
    json: { challenge_id: started.json.challenge_id, code },
  })
  expectStatus("verify", verified, 200)
  lap("verify")
  const completed = await send(ctx.port, ctx.interactionHost, `/v1/auth/transactions/${id}/complete`)
  expectStatus("complete", completed, 200)
  lap("complete")
  const token = await send(ctx.port, ctx.issuerHost, `/e/${ctx.environmentId}/oauth2/token`, {
    form: new URLSearchParams({
      grant_type: "authorization_code",
      code: completed.json.authorization_code,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
      client_id: ctx.clientId,
    }).toString(),
  })
  expectStatus("token", token, 200)
  if (typeof token.json.id_token !== "string") throw new Error("token: no id_token")
  lap("token")
  times.login.push(performance.now() - t0)
}

const emptyTimes = () => Object.fromEntries(STEPS.map((s) => [s, [] as Array<number>])) as Record<Step, Array<number>>
const pct = (xs: Array<number>, p: number) => {
  if (xs.length === 0) return Number.NaN
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!
}

let emailCounter = 0
// One tag per bench run: the warm-up's logins make every virtual user's address a returning user.
const TAG = randomBytes(3).toString("hex")
const run = async (ctx: Ctx, seconds: number) => {
  const times = emptyTimes()
  let failures = 0
  let firstFailure: string | undefined
  const deadline = performance.now() + seconds * 1000
  const user = async (n: number) => {
    const own = `vu${n}.${TAG}@example.com`
    while (performance.now() < deadline) {
      const email = NEW_USERS ? `new${++emailCounter}.${TAG}@example.com` : own
      try {
        await oneLogin(ctx, email, times)
      } catch (e) {
        failures++
        firstFailure ??= String(e)
      }
    }
  }
  const began = performance.now()
  await Promise.all(Array.from({ length: USERS }, (_, n) => user(n)))
  const elapsed = (performance.now() - began) / 1000
  return { times, failures, firstFailure, elapsed, logins: times.login.length }
}

async function main() {
  console.log(`load average at start: ${load1()}`)
  const sink = await startSink()
  const postgres = await startPostgres()
  const port = await freePort()
  const query = process.env["BENCH_SMTP_URL_QUERY"]
  const env: Record<string, string> = {
    PATH: process.env["PATH"]!,
    PORT: String(port),
    DATABASE_URL: postgres.url,
    MASTER_KEY: randomBytes(32).toString("base64url"),
    SMTP_URL: query ? `${sink.url}/?${query}` : sink.url,
    ...BENCH_RATE_LIMITS,
    // As the image runs it: JSON log lines, one per request (LOG_REQUESTS defaults to true).
    ...AS_DEPLOYED,
  }
  const children: Array<ChildProcess> = []
  const server = spawnEntry("src/main.ts", env)
  children.push(server)
  await waitFor(port, `api.localhost:${port}`, "/readyz")
  const worker = spawnEntry("src/worker.ts", env)
  children.push(worker)
  await waitForWorker(postgres.url)
  const stopAll = async () => {
    for (const c of children) await stopChild(c)
    await postgres.stop()
    await sink.close()
  }
  try {
    const b = bootstrap(env)
    const client = await send(
      port,
      `api.localhost:${port}`,
      "/v1/clients",
      {
        json: {
          environment_id: b.environment_id,
          client_type: "web_spa",
          name: "bench SPA",
          token_endpoint_auth_method: "none",
          redirect_uris: [REDIRECT],
          allowed_origins: ["https://app.example.com"],
          allowed_scopes: ["openid", "profile", "email", "offline_access"],
        },
      },
      { authorization: `Bearer ${b.api_key}` },
    )
    expectStatus("client", client, 201)
    const ctx: Ctx = {
      port,
      interactionHost: b.interaction_domain,
      issuerHost: `localhost:${port}`,
      environmentId: b.environment_id,
      clientId: client.json.id,
      sink,
    }
    // Warm-up (JIT, pools, the first login of every virtual user's address), not measured.
    await run(ctx, 5)
    if (PG_STATS) {
      const c = new pg.Client({ connectionString: postgres.url })
      await c.connect()
      await c.query("select pg_stat_statements_reset()")
      await c.end()
    }
    const cpu = () => ({
      server: treeCpuSeconds(server.pid!),
      worker: treeCpuSeconds(worker.pid!),
      postgres: treeCpuSeconds(postgres.postmaster),
      bench: process.cpuUsage(),
    })
    const rounds: Array<{
      rate: number
      r: Awaited<ReturnType<typeof run>>
      ms: { server: number; worker: number; postgres: number; bench: number }
      load: string
    }> = []
    for (let i = 0; i < ROUNDS; i++) {
      const before = cpu()
      const machineBefore = machineCpuSeconds()
      const r = await run(ctx, SECONDS)
      const after = cpu()
      const { stolenPercent } = machineShares(machineBefore, machineCpuSeconds())
      const n = Math.max(1, r.logins)
      const ms = {
        server: (1000 * (after.server - before.server)) / n,
        worker: (1000 * (after.worker - before.worker)) / n,
        postgres: (1000 * (after.postgres - before.postgres)) / n,
        bench: (after.bench.user + after.bench.system - before.bench.user - before.bench.system) / 1000 / n,
      }
      rounds.push({ rate: r.logins / r.elapsed, r, ms, load: load1() })
      console.log(
        `round ${i + 1}: ${(r.logins / r.elapsed).toFixed(1)} logins/s (${r.logins} in ${r.elapsed.toFixed(1)} s, ${r.failures} failed${r.firstFailure ? `: ${r.firstFailure}` : ""}), load ${load1()}, ${stolenPercent.toFixed(0)} % stolen by the hypervisor`,
      )
    }
    const median = [...rounds].sort((a, b) => a.rate - b.rate)[Math.floor(rounds.length / 2)]!
    console.log(
      `\n${USERS} virtual users, ${NEW_USERS ? "a new address every login" : "returning users"}, ${SECONDS} s per round, median of ${ROUNDS}`,
    )
    console.log(`logins/s: ${median.rate.toFixed(1)}  (mails received by the sink: ${sink.mails()})`)
    console.log("| step | p50 ms | p99 ms | mean ms |")
    console.log("| --- | --- | --- | --- |")
    for (const s of STEPS) {
      const xs = median.r.times[s]
      const mean = xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length)
      console.log(`| ${s} | ${pct(xs, 50).toFixed(1)} | ${pct(xs, 99).toFixed(1)} | ${mean.toFixed(1)} |`)
    }
    console.log(
      `CPU ms per login: server ${median.ms.server.toFixed(2)}, worker ${median.ms.worker.toFixed(2)}, Postgres ${median.ms.postgres.toFixed(2)}, bench (load generator + SMTP sink) ${median.ms.bench.toFixed(2)}`,
    )
    if (PG_STATS) {
      const c = new pg.Client({ connectionString: postgres.url })
      await c.connect()
      const { rows } = await c.query(
        `select calls, plans, total_exec_time + total_plan_time as total_exec_time, total_plan_time,
          left(regexp_replace(query, '\\s+', ' ', 'g'), 120) as query
        from pg_stat_statements order by total_exec_time + total_plan_time desc`,
      )
      await c.end()
      // Since the reset: the measured rounds' logins (the warm-up's are not counted).
      const n = rounds.reduce((a, r) => a + r.r.logins, 0)
      const calls = rows.reduce((a, r) => a + Number(r.calls), 0)
      console.log(`\npg_stat_statements per login (${(calls / n).toFixed(1)} statements per login), by total time:`)
      console.log("  ms/login (planning) calls/login plans/call  mean ms  statement")
      for (const row of rows.slice(0, 40))
        console.log(
          `${(row.total_exec_time / n).toFixed(3).padStart(10)} ${`(${(row.total_plan_time / n).toFixed(3)})`.padStart(10)} ${(row.calls / n).toFixed(2).padStart(11)} ${(row.plans / Math.max(1, row.calls)).toFixed(2).padStart(10)} ${(row.total_exec_time / row.calls).toFixed(3).padStart(8)}  ${row.query}`,
        )
    }
    console.log(`load average at end: ${load1()}`)
  } finally {
    await stopAll()
  }
  process.exit(0)
}

await main()
