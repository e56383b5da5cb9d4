import { type ChildProcess, spawn, execFileSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdtempSync, openSync, readdirSync, readFileSync, readlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import autocannon from "autocannon"
import { startEmbeddedPostgres } from "../src/platform/embedded-postgres.js"
import { freePort } from "../src/platform/free-port.js"

const TSX = join(process.cwd(), "node_modules/.bin/tsx")

export interface BenchServer {
  readonly port: number
  readonly env: Record<string, string>
  readonly stop: () => Promise<void>
  /** The server's process (the root of its process tree). */
  readonly pid: number
  /** CPU seconds used so far by the server process tree, the worker's (0 without one), and the embedded Postgres (0 with DATABASE_URL). */
  readonly cpu: () => { readonly server: number; readonly worker: number; readonly postgres: number }
}

/**
 * Our server and worker as the image runs them (Dockerfile: NODE_ENV=production, so JSON log
 * lines), as oidc-provider runs beside them; the schema is migrated at start (production's
 * default is a separate `npm run migrate`), and with no SMTP_URL mail stays in memory.
 */
export const AS_DEPLOYED: Record<string, string> = {
  NODE_ENV: "production",
  MIGRATE_ON_START: "true",
  MAIL_ALLOW_DEV_MAILER: "true",
}

/**
 * Every rate limit raised out of the way: a bench drives one client, one key and one address
 * far past what any caller may send (the limits' counting still runs, so its cost is measured).
 * Numbers and reasoning of the real defaults: docs/decisions/rate-limits-and-caches.md, "Write limits".
 */
export const BENCH_RATE_LIMITS: Record<string, string> = Object.fromEntries(
  [
    "RATE_LIMIT_IP_PER_MINUTE",
    "RATE_LIMIT_IPV6_56_PER_MINUTE",
    "RATE_LIMIT_IPV6_48_PER_MINUTE",
    "RATE_LIMIT_CLIENT_PER_MINUTE",
    "RATE_LIMIT_EMAIL_PER_10_MINUTES",
    "RATE_LIMIT_EMAIL_CEILING_PER_HOUR",
    "RATE_LIMIT_OTP_VERIFY_PER_EMAIL_PER_MINUTE",
    "RATE_LIMIT_SOCIAL_START_PER_MINUTE",
    "RATE_LIMIT_SOCIAL_START_CEILING_PER_MINUTE",
    "RATE_LIMIT_PASSKEY_OPTIONS_PER_MINUTE",
    "RATE_LIMIT_PASSKEY_OPTIONS_CEILING_PER_MINUTE",
    "RATE_LIMIT_ME_WRITES_PER_MINUTE",
    "RATE_LIMIT_ME_WRITES_CEILING_PER_MINUTE",
    "RATE_LIMIT_TOKEN_PER_MINUTE",
    "RATE_LIMIT_TOKEN_CEILING_PER_MINUTE",
    "RATE_LIMIT_INTROSPECT_PER_MINUTE",
    "RATE_LIMIT_INTROSPECT_CEILING_PER_MINUTE",
    "RATE_LIMIT_MANAGEMENT_PER_MINUTE",
    "RATE_LIMIT_WEBHOOK_TEST_PER_MINUTE",
  ].map((name) => [name, "100000000"]),
)

/** What started servers still need to stop: a bench that fails half-way stops them all (`stopStarted`). */
const started = new Set<() => Promise<void>>()

/** Stops every server `startServer` started and nobody stopped yet (a bench's failure path). */
export const stopStarted = async () => {
  // Last started first: a server before its Postgres.
  for (const stop of [...started].reverse()) await stop()
}

/**
 * Embedded Postgres (or DATABASE_URL, or `options.databaseUrl`) + the real server in its own
 * process, like production; `options.entry` and `options.env` run another entry or settings.
 */
export const startServer = async (
  options: { entry?: string; env?: Record<string, string>; databaseUrl?: string; worker?: boolean } = {},
): Promise<BenchServer> => {
  // BENCH_SERVER_ENV='{"NAME":"value"}': settings for the server and worker of this run (A/B
  // runs), read before anything starts so a malformed one leaves nothing running.
  const serverEnv = JSON.parse(process.env["BENCH_SERVER_ENV"] || "{}") as Record<string, string>
  let databaseUrl = options.databaseUrl ?? process.env["DATABASE_URL"]
  let stopDb: (() => Promise<void>) | undefined
  let pgDir: string | undefined
  if (!databaseUrl) {
    const dir = mkdtempSync(join(tmpdir(), "authservice-bench-"))
    pgDir = join(dir, "postgres")
    const pg = await startEmbeddedPostgres(dir, { persistent: false })
    databaseUrl = pg.url
    stopDb = pg.stop
    started.add(pg.stop)
  }
  const port = await freePort()
  const env = {
    PATH: process.env["PATH"]!,
    PORT: String(port),
    DATABASE_URL: databaseUrl,
    MASTER_KEY: process.env["MASTER_KEY"] ?? randomBytes(32).toString("base64url"),
    // Request logs stay on, as `npm start` runs (LOG_REQUESTS defaults to true); stdout goes to
    // /dev/null unless BENCH_SERVER_LOG names a file.
    ...BENCH_RATE_LIMITS,
    ...options.env,
    ...serverEnv,
  }
  // BENCH_SERVER_LOG=<file>: the server's stdout (warnings, errors) goes there instead of nowhere.
  const log = process.env["BENCH_SERVER_LOG"]
  // BENCH_COMPILED=1: the compiled build (dist/, `npm run build` first), run by node alone as
  // production runs it (`npm run server`), not through tsx's loader.
  const launch = (entry: string): [string, Array<string>] =>
    process.env["BENCH_COMPILED"]
      ? [process.execPath, [entry.replace(/^src\/(.*)\.ts$/, "dist/$1.js")]]
      : [TSX, [entry]]
  const child = spawn(...launch(options.entry ?? "src/main.ts"), {
    env,
    stdio: ["ignore", log ? openSync(log, "w") : "ignore", "inherit"],
  })
  const stopServer = () => stopChild(child)
  started.add(stopServer)
  await waitFor(port, `api.localhost:${port}`, "/readyz")
  // options.worker: src/worker.ts in its own process beside the server (production's layout), so
  // the jobs a request queues (events, mail) are charged to the run like the server's own work.
  const worker = options.worker
    ? spawn(...launch("src/worker.ts"), {
        env,
        stdio: ["ignore", log ? openSync(`${log}.worker`, "w") : "ignore", "inherit"],
      })
    : undefined
  const stopWorker = () => (worker === undefined ? Promise.resolve() : stopChild(worker))
  started.add(stopWorker)
  const postmaster = pgDir === undefined ? undefined : postmasterPid(pgDir)
  return {
    port,
    env,
    pid: child.pid!,
    cpu: () => ({
      server: treeCpuSeconds(child.pid!),
      worker: worker === undefined ? 0 : treeCpuSeconds(worker.pid!),
      postgres: postmaster === undefined ? 0 : treeCpuSeconds(postmaster),
    }),
    stop: async () => {
      await stopWorker()
      await stopServer()
      await stopDb?.()
      for (const stop of [stopWorker, stopServer, stopDb]) if (stop) started.delete(stop)
    },
  }
}

export const stopChild = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.kill("SIGTERM")
  })

export const waitFor = async (port: number, host: string, path: string) => {
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    const ok = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { host } }).then(
      (r) => r.ok,
      () => false,
    )
    if (ok) return
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error(`server on ${port} did not become ready`)
}

export const bootstrap = (env: Record<string, string>) =>
  JSON.parse(execFileSync(TSX, ["src/cli.ts", "bootstrap", "--json"], { env, encoding: "utf8" }).trim()) as {
    workspace_id: string
    environment_id: string
    api_key: string
    issuer: string
    interaction_domain: string
  }

export interface LoadResult {
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly non2xx: number
  readonly errors: number
  /** How long the run took (s). */
  readonly seconds: number
  /** Answers by HTTP status. */
  readonly statuses: Record<string, number>
}

/** autocannon against one URL with an explicit Host header. */
export const load = (options: {
  url: string
  host: string
  connections?: number
  seconds?: number
  method?: "GET" | "POST"
  headers?: Record<string, string>
  body?: string
  requests?: Array<autocannon.Request>
  /** Exactly this many requests instead of `seconds` (a pool of tokens each sent once). */
  amount?: number
}): Promise<LoadResult> =>
  new Promise((resolve, reject) => {
    autocannon(
      {
        url: options.url,
        connections: options.connections ?? 32,
        // autocannon notices the end of a run at its next sample: every 1 s by default, which
        // would round a run of a fixed amount up to whole seconds.
        ...(options.amount !== undefined
          ? { amount: options.amount, sampleInt: 20 }
          : { duration: options.seconds ?? 8 }),
        method: options.method ?? "GET",
        headers: { host: options.host, ...options.headers },
        ...(options.body !== undefined ? { body: options.body } : {}),
        ...(options.requests ? { requests: options.requests } : {}),
      },
      (err, result) =>
        err
          ? reject(err)
          : resolve({
              // Only answered requests count: a refused or failed request is not throughput.
              rps: result["2xx"] / result.duration,
              p50: result.latency.p50,
              p99: result.latency.p99,
              non2xx: result.non2xx,
              errors: result.errors,
              seconds: result.duration,
              statuses: Object.fromEntries(
                Object.entries(result.statusCodeStats ?? {}).map(([status, stat]) => [status, stat?.count ?? 0]),
              ),
            }),
    )
  })

export const table = (rows: Record<string, LoadResult>) => {
  console.log("| target | req/s | p50 ms | p99 ms | non-2xx | errors |")
  console.log("| --- | --- | --- | --- | --- | --- |")
  for (const [name, r] of Object.entries(rows))
    console.log(`| ${name} | ${Math.round(r.rps)} | ${r.p50} | ${r.p99} | ${r.non2xx} | ${r.errors} |`)
}

/**
 * CPU seconds (user + system) used so far by a process and all its descendants, read from
 * /proc (Linux). A load-independent cost measure: CPU per request stays comparable when other
 * work on the machine changes the req/s.
 */
/**
 * The machine's CPU time so far in seconds over all cores (/proc/stat): busy, idle, and stolen
 * (the hypervisor ran something else while this VM wanted its cores). What is left idle during a
 * run says whether the 2 cores, shared by every process, were the bound; steal says how much of
 * the machine another tenant took, which slows every process and moves CPU per request between runs.
 */
export interface MachineCpu {
  readonly busy: number
  readonly idle: number
  readonly steal: number
}

export const machineCpuSeconds = (): MachineCpu => {
  const fields = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number)
  const ticks = 100
  const idle = (fields[3]! + fields[4]!) / ticks
  const steal = (fields[7] ?? 0) / ticks
  return { busy: fields.reduce((a, b) => a + b, 0) / ticks - idle - steal, idle, steal }
}

/** Shares of the machine's CPU time between two readings of machineCpuSeconds, in percent. */
export const machineShares = (before: MachineCpu, after: MachineCpu) => {
  const idle = after.idle - before.idle
  const steal = after.steal - before.steal
  const total = idle + steal + after.busy - before.busy
  return { idlePercent: (100 * idle) / total, stolenPercent: (100 * steal) / total }
}

export const treeCpuSeconds = (rootPid: number): number => {
  const ticks = 100 // USER_HZ on Linux
  const stats = new Map<number, { ppid: number; cpu: number }>()
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const text = readFileSync(`/proc/${entry}/stat`, "utf8")
      const fields = text.slice(text.lastIndexOf(")") + 2).split(" ") // after "pid (comm) "
      // utime + stime, and cutime + cstime: the CPU of children that ended and were waited for
      // (Postgres backends of closed connections) stays counted in their parent's.
      const [utime, stime, cutime, cstime] = [11, 12, 13, 14].map((i) => Number(fields[i]))
      stats.set(Number(entry), { ppid: Number(fields[1]), cpu: (utime! + stime! + cutime! + cstime!) / ticks })
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

/** VmRSS (kB) of each process of a tree: the root and all its descendants, read from /proc. */
const treeRssKb = (rootPid: number): Array<number> => {
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
  const inTree: Array<number> = []
  for (const [pid, value] of rss) {
    for (let p = pid, hops = 0; p > 1 && hops < 64; hops++, p = parents.get(p) ?? 0) {
      if (p === rootPid) {
        inTree.push(value)
        break
      }
    }
  }
  return inTree
}

/** Resident memory (VmRSS, MB) of a process and all its descendants. */
export const treeRssMb = (rootPid: number): number => Math.round(treeRssKb(rootPid).reduce((a, b) => a + b, 0) / 1024)

/**
 * Resident memory (VmRSS, MB) of the largest single process in a tree: the server itself when
 * the tree is a launcher (tsx) and the server it started.
 */
export const largestProcessRssMb = (rootPid: number): number => Math.round(Math.max(0, ...treeRssKb(rootPid)) / 1024)

/** The postmaster's pid of an embedded Postgres data directory. */
export const postmasterPid = (dataDir: string) =>
  Number(readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n")[0])

/** The samples of one run under `outer` then `inner`, created on first use (runs are grouped for medians). */
export const samplesOf = <T>(samples: Record<string, Record<string, Array<T>>>, outer: string, inner: string) => {
  const byInner = samples[outer] ?? {}
  samples[outer] = byInner
  const list = byInner[inner] ?? []
  byInner[inner] = list
  return list
}

/** utime + stime (and, with `reaped`, cutime + cstime: children that ended) of one process, in seconds. */
export const processCpuSeconds = (pid: number, options: { reaped?: boolean } = {}): number => {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8")
    const f = text.slice(text.lastIndexOf(")") + 2).split(" ")
    const own = Number(f[11]) + Number(f[12])
    return (options.reaped ? own + Number(f[13]) + Number(f[14]) : own) / 100 // USER_HZ
  } catch {
    return 0 // the process ended
  }
}

/**
 * CPU seconds of an embedded Postgres: the postmaster, its live backends, and the backends
 * that already ended (the postmaster reaps them, so they are in its cutime/cstime). A pool that
 * closes idle connections mid-run would otherwise take their CPU out of the sum.
 */
export const postgresCpuSeconds = (postmaster: number): number => {
  let total = processCpuSeconds(postmaster, { reaped: true })
  for (const pid of childPids(postmaster)) total += processCpuSeconds(pid)
  return total
}

/** The direct children of a process. */
export const childPids = (parent: number): Array<number> => {
  const pids: Array<number> = []
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const text = readFileSync(`/proc/${entry}/stat`, "utf8")
      if (Number(text.slice(text.lastIndexOf(")") + 2).split(" ")[1]) === parent) pids.push(Number(entry))
    } catch {
      // the process ended meanwhile
    }
  }
  return pids
}

/**
 * Local TCP ports of the sockets a process holds (from /proc/<pid>/fd and /proc/net/tcp{,6}):
 * with pg_stat_activity.client_port, which Postgres backends serve that process.
 */
export const localTcpPorts = (pid: number): Set<number> => {
  const inodes = new Set<string>()
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))
        if (m) inodes.add(m[1]!)
      } catch {
        // closed meanwhile
      }
    }
  } catch {
    return new Set()
  }
  const ports = new Set<number>()
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text: string
    try {
      text = readFileSync(table, "utf8")
    } catch {
      continue
    }
    for (const line of text.split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/)
      if (cols.length > 9 && inodes.has(cols[9]!)) ports.add(parseInt(cols[1]!.split(":")[1]!, 16))
    }
  }
  return ports
}
