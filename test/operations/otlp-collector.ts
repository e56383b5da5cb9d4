import { createServer, type Server } from "node:http"
import { createServer as createTcpServer, type Server as TcpServer } from "node:net"
import type { AddressInfo } from "node:net"

/** One span of an OTLP/JSON export, with its resource's attributes. */
export interface CollectedSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly name: string
  readonly kind: number
  readonly attributes: Readonly<Record<string, unknown>>
  readonly resource: Readonly<Record<string, unknown>>
}

interface AnyValue {
  readonly stringValue?: string
  readonly intValue?: string | number
  readonly boolValue?: boolean
  readonly doubleValue?: number
}
interface KeyValue {
  readonly key: string
  readonly value: AnyValue
}
const anyValue = (v: AnyValue): unknown => v.stringValue ?? v.intValue ?? v.boolValue ?? v.doubleValue
const record = (attributes: ReadonlyArray<KeyValue> | undefined) =>
  Object.fromEntries((attributes ?? []).map((a) => [a.key, anyValue(a.value)]))

/**
 * An in-process OTLP/HTTP collector: keeps every export it receives (path, content type, raw
 * body) and reads the spans of the OTLP/JSON ones (the OTLP specification's JSON encoding:
 * trace and span ids in hex).
 */
export const startOtlpCollector = async () => {
  const exports: Array<{
    path: string
    contentType: string | undefined
    headers: Readonly<Record<string, string | Array<string> | undefined>>
    body: Buffer
  }> = []
  const server: Server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      exports.push({
        path: req.url ?? "",
        contentType: req.headers["content-type"],
        headers: req.headers,
        body: Buffer.concat(chunks),
      })
      res.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const spans = (): Array<CollectedSpan> =>
    exports
      .filter((e) => e.contentType?.startsWith("application/json"))
      .flatMap((e) => {
        const body = JSON.parse(e.body.toString("utf8")) as {
          resourceSpans: Array<{
            resource?: { attributes?: Array<KeyValue> }
            scopeSpans: Array<{
              spans: Array<{
                traceId: string
                spanId: string
                parentSpanId?: string
                name: string
                kind: number
                attributes?: Array<KeyValue>
              }>
            }>
          }>
        }
        return body.resourceSpans.flatMap((r) =>
          r.scopeSpans.flatMap((s) =>
            s.spans.map((span) => ({
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId || undefined,
              name: span.name,
              kind: span.kind,
              attributes: record(span.attributes),
              resource: record(r.resource?.attributes),
            })),
          ),
        )
      })
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    exports,
    spans,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/**
 * A port where every connection is accepted and reset at once: a collector that cannot be
 * reached. Counts the attempts; `recover()` makes it answer OTLP exports (200) from then on.
 */
export const startUnreachableCollector = async () => {
  let connections = 0
  let recovered = false
  const answering = createServer((req, res) => {
    req.resume()
    req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end("{}"))
  })
  const server: TcpServer = createTcpServer((socket) => {
    connections++
    if (recovered) answering.emit("connection", socket)
    else socket.resetAndDestroy()
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections: () => connections,
    recover: () => {
      recovered = true
    },
    close: () =>
      new Promise<void>((resolve) => {
        answering.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
