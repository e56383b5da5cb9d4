import type { AppConfig } from "../platform/config.js"

export interface RequestLine {
  readonly requestId: string
  readonly inbound: string | undefined
  readonly method: string
  readonly host: string | undefined
  readonly url: string
  readonly status: number
  readonly duration: number
}

// One line per request, written directly: Effect's logger costs a third of the
// throughput here (STACK.md measurements). Query strings may carry codes and tokens,
// so only the path is logged.
export const logRequest = (config: AppConfig, line: RequestLine) => {
  if (!config.logRequests) return
  const path = line.url.split("?")[0]
  if (config.production) {
    process.stdout.write(JSON.stringify({
      level: "info", msg: "request", request_id: line.requestId,
      ...(line.inbound ? { inbound_request_id: line.inbound.slice(0, 128) } : {}),
      method: line.method, host: line.host, path, status: line.status, duration_ms: Math.round(line.duration * 10) / 10,
    }) + "\n")
  } else {
    process.stdout.write(`${line.method} ${line.host ?? "-"}${path} ${line.status} ${line.duration.toFixed(1)}ms ${line.requestId}\n`)
  }
}
