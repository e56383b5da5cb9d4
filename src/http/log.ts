import type { AppConfig } from "../platform/config.js"
import { writeLogLine } from "../platform/observability/log-sink.js"
import { redactText } from "../platform/observability/redact.js"

export interface RequestLine {
  readonly at: number
  readonly requestId: string
  readonly inbound: string | undefined
  readonly traceId: string | undefined
  readonly method: string
  readonly host: string | undefined
  readonly surface: string
  readonly route: string
  readonly url: string
  readonly status: number
  readonly duration: number
  /** The limit (counter bucket) that refused the request with 429, if one did. */
  readonly limit?: string | undefined
}

// One line per request, written directly: Effect's logger costs a third of the
// throughput here (measured: docs/decisions/performance.md). Query strings may carry codes and tokens,
// so only the path is logged, with anything shaped like an email or a token masked.
export const logRequest = (config: AppConfig, line: RequestLine) => {
  const path = redactText(line.url.split("?")[0]!)
  if (config.production) {
    writeLogLine(
      JSON.stringify({
        time: new Date(line.at).toISOString(),
        level: "info",
        msg: "request",
        request_id: line.requestId,
        ...(line.traceId ? { trace_id: line.traceId } : {}),
        ...(line.inbound ? { inbound_request_id: redactText(line.inbound.slice(0, 128)) } : {}),
        method: line.method,
        surface: line.surface,
        host: line.host === undefined ? undefined : redactText(line.host.slice(0, 255)),
        route: line.route,
        path,
        status: line.status,
        duration_ms: Math.round(line.duration * 10) / 10,
        ...(line.limit ? { limit: line.limit } : {}),
      }) + "\n",
    )
  } else {
    // Development: at once, in order with the lines of Effect's own logger, which writes at once.
    process.stdout.write(
      `${line.method} ${line.host ?? "-"}${path} ${line.status} ${line.duration.toFixed(1)}ms ${line.requestId}${line.limit ? ` limit=${line.limit}` : ""}\n`,
    )
  }
}
