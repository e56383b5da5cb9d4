import { Logger } from "graphile-worker"

/** graphile-worker's own messages: warnings and errors only, one line each, never payloads. */
export const workerLogger = new Logger(() => (level, message) => {
  if (level === "error" || level === "warning") process.stderr.write(`[worker] ${level}: ${message}\n`)
})
