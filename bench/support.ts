import { type ChildProcess, spawn, execFileSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdtempSync, openSync, readdirSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import autocannon from "autocannon"
import { freePort, startEmbeddedPostgres } from "../src/platform/embedded-postgres.js"

const TSX = join(process.cwd(), "node_modules/.bin/tsx")

export interface BenchServer {
  readonly port: number
  readonly env: Record<string, string>
  readonly stop: () => Promise<void>
  /** The server's process (the root of its process tree). */
  readonly pid: number
  /** CPU seconds used so far by the server process tree, and by the embedded Postgres (0 with DATABASE_URL). */
  readonly cpu: () => { readonly server: number; readonly postgres: number }
}

/**
 * Every rate limit raised out of the way: a bench drives one client, one key and one address
 * far past what any caller may send (the limits' counting still runs, so its cost is measured).
 * Numbers and reasoning of the real defaults: docs/decisions/rate-limits-and-caches.md, "Write limits".
 */
export const BENCH_RATE_LIMITS: Record<string, string> = Object.fromEntries([
  "RATE_LIMIT_IP_PER_MINUTE", "RATE_LIMIT_IPV6_56_PER_MINUTE", "RATE_LIMIT_IPV6_48_PER_MINUTE", "RATE_LIMIT_CLIENT_PER_MINUTE",
  "RATE_LIMIT_EMAIL_PER_10_MINUTES", "RATE_LIMIT_EMAIL_CEILING_PER_HOUR", "RATE_LIMIT_OTP_VERIFY_PER_EMAIL_PER_MINUTE",
  "RATE_LIMIT_SOCIAL_START_PER_MINUTE", "RATE_LIMIT_SOCIAL_START_CEILING_PER_MINUTE",
  "RATE_LIMIT_PASSKEY_OPTIONS_PER_MINUTE", "RATE_LIMIT_PASSKEY_OPTIONS_CEILING_PER_MINUTE",
  "RATE_LIMIT_ME_WRITES_PER_MINUTE", "RATE_LIMIT_ME_WRITES_CEILING_PER_MINUTE",
  "RATE_LIMIT_TOKEN_PER_MINUTE", "RATE_LIMIT_TOKEN_CEILING_PER_MINUTE",
  "RATE_LIMIT_INTROSPECT_PER_MINUTE", "RATE_LIMIT_INTROSPECT_CEILING_PER_MINUTE",
  "RATE_LIMIT_MANAGEMENT_PER_MINUTE", "RATE_LIMIT_WEBHOOK_TEST_PER_MINUTE",
].map((name) => [name, "100000000"]))

/**
 * Embedded Postgres (or DATABASE_URL, or `options.databaseUrl`) + the real server in its own
 * process, like production; `options.entry` and `options.env` run another entry or settings.
 */
export const startServer = async (options: { entry?: string; env?: Record<string, string>; databaseUrl?: string } = {}): Promise<BenchServer> => {
  let databaseUrl = options.databaseUrl ?? process.env["DATABASE_URL"]
  let stopDb: (() => Promise<void>) | undefined
  let pgDir: string | undefined
  if (!databaseUrl) {
    const dir = mkdtempSync(join(tmpdir(), "authservice-bench-"))
    pgDir = join(dir, "postgres")
    const pg = await startEmbeddedPostgres(dir, { persistent: false })
    databaseUrl = pg.url
    stopDb = pg.stop
  }
  const port = await freePort()
  const env = {
    PATH: process.env["PATH"]!, PORT: String(port), DATABASE_URL: databaseUrl,
    MASTER_KEY: process.env["MASTER_KEY"] ?? randomBytes(32).toString("base64url"), LOG_REQUESTS: "false", ...BENCH_RATE_LIMITS, ...options.env,
  }
  // BENCH_SERVER_LOG=<file>: the server's stdout (warnings, errors) goes there instead of nowhere.
  const log = process.env["BENCH_SERVER_LOG"]
  const child = spawn(TSX, [options.entry ?? "src/main.ts"], { env, stdio: ["ignore", log ? openSync(log, "w") : "ignore", "inherit"] })
  await waitFor(port, `api.localhost:${port}`, "/readyz")
  const postmaster = pgDir === undefined ? undefined : postmasterPid(pgDir)
  return {
    port, env, pid: child.pid!,
    cpu: () => ({ server: treeCpuSeconds(child.pid!), postgres: postmaster === undefined ? 0 : treeCpuSeconds(postmaster) }),
    stop: async () => {
      await stopChild(child)
      await stopDb?.()
    },
  }
}

export const stopChild = (child: ChildProcess) => new Promise<void>((resolve) => {
  if (child.exitCode !== null) return resolve()
  child.once("exit", () => resolve())
  child.kill("SIGTERM")
})

export const waitFor = async (port: number, host: string, path: string) => {
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    const ok = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { host } }).then((r) => r.ok, () => false)
    if (ok) return
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error(`server on ${port} did not become ready`)
}

export const bootstrap = (env: Record<string, string>) =>
  JSON.parse(execFileSync(TSX, ["src/cli.ts", "bootstrap", "--json"], { env, encoding: "utf8" }).trim()) as {
    workspace_id: string; environment_id: string; api_key: string; issuer: string; interaction_domain: string
  }

export interface LoadResult { readonly rps: number; readonly p50: number; readonly p99: number; readonly non2xx: number; readonly errors: number }

/** autocannon against one URL with an explicit Host header. */
export const load = (options: {
  url: string; host: string; connections?: number; seconds?: number; method?: "GET" | "POST"
  headers?: Record<string, string>; body?: string; requests?: Array<autocannon.Request>
}): Promise<LoadResult> => new Promise((resolve, reject) => {
  autocannon({
    url: options.url, connections: options.connections ?? 32, duration: options.seconds ?? 8,
    method: options.method ?? "GET", headers: { host: options.host, ...options.headers },
    ...(options.body !== undefined ? { body: options.body } : {}),
    ...(options.requests ? { requests: options.requests } : {}),
  }, (err, result) => err ? reject(err) : resolve({
    // Only answered requests count: a refused or failed request is not throughput.
    rps: result["2xx"] / result.duration, p50: result.latency.p50, p99: result.latency.p99,
    non2xx: result.non2xx, errors: result.errors,
  }))
})

export const table = (rows: Record<string, LoadResult>) => {
  console.log("| target | req/s | p50 ms | p99 ms | non-2xx | errors |")
  console.log("| --- | --- | --- | --- | --- | --- |")
  for (const [name, r] of Object.entries(rows)) console.log(`| ${name} | ${Math.round(r.rps)} | ${r.p50} | ${r.p99} | ${r.non2xx} | ${r.errors} |`)
}

/**
 * CPU seconds (user + system) used so far by a process and all its descendants, read from
 * /proc (Linux). A load-independent cost measure: CPU per request stays comparable when other
 * work on the machine changes the req/s.
 */
export const treeCpuSeconds = (rootPid: number): number => {
  const ticks = 100 // USER_HZ on Linux
  const stats = new Map<number, { ppid: number; cpu: number }>()
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const text = readFileSync(`/proc/${entry}/stat`, "utf8")
      const fields = text.slice(text.lastIndexOf(")") + 2).split(" ") // after "pid (comm) "
      stats.set(Number(entry), { ppid: Number(fields[1]), cpu: (Number(fields[11]) + Number(fields[12])) / ticks })
    } catch {
      // the process ended meanwhile
    }
  }
  const inTree = (pid: number): boolean => {
    for (let p = pid, hops = 0; p > 1 && hops < 64; hops++) {
      if (p === rootPid) return true
      p = stats.get(p)?.ppid ?? 0
    }
    return false
  }
  let total = 0
  for (const [pid, s] of stats) if (inTree(pid)) total += s.cpu
  return total
}

/** Resident memory (VmRSS, MB) of a process and all its descendants. */
export const treeRssMb = (rootPid: number): number => {
  const parents = new Map<number, number>()
  const rss = new Map<number, number>()
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const status = readFileSync(`/proc/${entry}/status`, "utf8")
      parents.set(Number(entry), Number(/^PPid:\s+(\d+)/m.exec(status)?.[1] ?? 0))
      rss.set(Number(entry), Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0))
    } catch {
      // the process ended meanwhile
    }
  }
  let kb = 0
  for (const [pid, value] of rss) {
    for (let p = pid, hops = 0; p > 1 && hops < 64; hops++, p = parents.get(p) ?? 0) {
      if (p === rootPid) {
        kb += value
        break
      }
    }
  }
  return Math.round(kb / 1024)
}

/** The postmaster's pid of an embedded Postgres data directory. */
export const postmasterPid = (dataDir: string) => Number(readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n")[0])
