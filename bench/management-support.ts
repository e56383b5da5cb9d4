// Helpers of the Management API benchmarks (bench/users-list.ts, bench/audit-events.ts). The
// server itself is the real one in its own process (startServer in ./support.ts); this file
// adds: SQL on its database (seeding, EXPLAIN of the exact statement a repository builds) and
// sequential latency measurement over HTTP with one kept-alive connection.
import { Agent, request } from "node:http"
import { PgClient } from "@effect/sql-pg"
import { Effect, type Layer, ManagedRuntime, Redacted } from "effect"
import { SqlClient } from "effect/sql"

type Compilable = { readonly compile: () => readonly [string, ReadonlyArray<unknown>] }

/** A small SQL client on the benchmark database (the server has its own pool). */
export const database = (url: string) => {
  const runtime = ManagedRuntime.make(
    PgClient.layer({ url: Redacted.make(url), maxConnections: 2 }) as Layer.Layer<SqlClient.SqlClient, unknown>,
  )
  const withSql = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
    runtime.runPromise(Effect.flatMap(Effect.service(SqlClient.SqlClient), f))
  return {
    query: <A extends object = Record<string, unknown>>(text: string, params: ReadonlyArray<unknown> = []) =>
      withSql((sql) => sql.unsafe<A>(text, params as Array<unknown>)),
    /** EXPLAIN (ANALYZE, BUFFERS) of the exact statement a repository's statement builder makes. */
    explain: async (build: (sql: SqlClient.SqlClient) => Compilable) => {
      const [text, params] = await withSql((sql) => Effect.sync(() => build(sql).compile()))
      const rows = await withSql((sql) =>
        sql.unsafe<{ "QUERY PLAN": string }>(`explain (analyze, buffers, costs off) ${text}`, params as Array<unknown>),
      )
      return rows.map((r) => r["QUERY PLAN"]).join("\n")
    },
    close: () => runtime.dispose(),
  }
}

const agent = new Agent({ keepAlive: true, maxSockets: 1 })

const get = (port: number, host: string, path: string, headers: Record<string, string>) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(
      { host: "127.0.0.1", port, path, method: "GET", headers: { host, ...headers }, agent },
      (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }))
      },
    )
    req.on("error", reject)
    req.end()
  })

export interface Latency {
  readonly p50: number
  readonly p95: number
  readonly p99: number
  readonly mean: number
  readonly max: number
  readonly bytes: number
}

/** `count` sequential GETs (after `warmup` unmeasured ones) with an API key; every answer must be 200. */
export const sequential = async (
  target: { port: number; host: string; apiKey: string },
  path: string,
  count = 500,
  warmup = 50,
): Promise<Latency> => {
  const headers = { authorization: `Bearer ${target.apiKey}` }
  let bytes = 0
  const times: Array<number> = []
  for (let i = 0; i < warmup + count; i++) {
    const start = process.hrtime.bigint()
    const res = await get(target.port, target.host, path, headers)
    const ms = Number(process.hrtime.bigint() - start) / 1e6
    if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}: ${res.body.slice(0, 300)}`)
    if (i >= warmup) times.push(ms)
    bytes = res.body.length
  }
  times.sort((a, b) => a - b)
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!
  return {
    p50: at(0.5),
    p95: at(0.95),
    p99: at(0.99),
    mean: times.reduce((s, t) => s + t, 0) / times.length,
    max: times[times.length - 1]!,
    bytes,
  }
}

export const report = (label: string, l: Latency) =>
  console.log(
    `${label.padEnd(60)} p50 ${l.p50.toFixed(2).padStart(6)} ms  p95 ${l.p95.toFixed(2).padStart(6)} ms  p99 ${l.p99.toFixed(2).padStart(6)} ms  (${l.bytes} B)`,
  )
