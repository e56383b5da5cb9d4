import { Logger } from "graphile-worker"
import { redactText } from "./observability/redact.js"

// graphile-worker's logger is made before configuration is parsed; NODE_ENV is all it needs.
const production = process.env["NODE_ENV"] === "production"

/** graphile-worker's own messages: warnings and errors only, one line each (JSON in production), never payloads. */
export const workerLogger = new Logger(() => (level, message) => {
  if (level !== "error" && level !== "warning") return
  const text = redactText(message)
  process.stderr.write(production
    ? `${JSON.stringify({ time: new Date().toISOString(), level: level === "warning" ? "warn" : "error", msg: text, source: "graphile-worker" })}\n`
    : `[worker] ${level}: ${text}\n`)
})
