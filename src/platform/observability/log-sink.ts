/**
 * Where every production log line of the process goes: stdout, in one write per turn of the
 * event loop. A write to stdout is synchronous for files and, on Linux, for pipes (a
 * container's log driver), so one write per line cost a system call and a buffer per request on
 * the hottest answers (docs/decisions/performance.md, "Log lines"). Lines keep their order,
 * whichever of the request log, the application's logger or graphile-worker's wrote them; the
 * lines of the last turn are written when the process exits, however it exits short of being
 * killed.
 */
let pending: Array<string> = []
let scheduled = false

const flush = () => {
  scheduled = false
  if (pending.length === 0) return
  const text = pending.length === 1 ? pending[0]! : pending.join("")
  pending = []
  process.stdout.write(text)
}

process.on("exit", flush)

/** Writes one line (ending in a newline) after the work of this turn of the event loop. */
export const writeLogLine = (line: string) => {
  pending.push(line)
  if (scheduled) return
  scheduled = true
  setImmediate(flush)
}
