import { Logger } from "graphile-worker"
import { type LogLevelName, logLevelEnabled, parseLogLevel } from "./observability/log-level.js"
import { writeLogLine } from "./observability/log-sink.js"
import { redactText } from "./observability/redact.js"

// graphile-worker's logger is made before configuration is parsed: NODE_ENV and LOG_LEVEL
// are read here as parseConfig reads them (an invalid LOG_LEVEL stops the process there first).
const production = process.env["NODE_ENV"] === "production"
const minimum = ((): LogLevelName => {
  try {
    return parseLogLevel(process.env["LOG_LEVEL"])
  } catch {
    return "info"
  }
})()

/**
 * graphile-worker's levels in ours: its `info` lines (worker connected, cron ticks) are detail
 * for an operator, so they show at LOG_LEVEL=debug; its `debug` at none.
 */
const LEVELS: Record<string, LogLevelName | undefined> = { error: "error", warning: "warn", info: "debug" }

/**
 * graphile-worker's own messages on stdout like every other line of the process (JSON in
 * production, with `source: "graphile-worker"`; a readable line elsewhere), one line each,
 * never payloads; a stack trace it appends is cut to its first line.
 */
export const workerLogger = new Logger(() => (level, message) => {
  const ours = LEVELS[level]
  if (ours === undefined || !logLevelEnabled(minimum, ours)) return
  const text = redactText(firstLine(message))
  // Development: at once, in order with the lines of Effect's own logger, which writes at once.
  if (production)
    writeLogLine(
      `${JSON.stringify({ time: new Date().toISOString(), level: ours, msg: text, source: "graphile-worker" })}\n`,
    )
  else process.stdout.write(`[worker] ${ours}: ${text}\n`)
})

const firstLine = (message: string) => message.split("\n", 1)[0]!.trimEnd()
