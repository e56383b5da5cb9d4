// Benchmark: webhook fan-out and delivery through the real graphile-worker pool.
// 10,000 events (user.created), 3 subscriptions each, a local HTTP receiver answering 204.
// Reports events/s fully delivered (all 3 subscriptions) and end-to-end lag (receiver arrival
// minus the event's occurredAt) p50/p99/max.
// Run: npx tsx bench/webhooks-fanout.ts   (env: BENCH_EVENTS, BENCH_CONCURRENCY, BENCH_EMITTERS,
// DATABASE_URL to use an existing server instead of an embedded Postgres)
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer, ManagedRuntime, References } from "effect"
import { SqlClient } from "effect/sql"
import { WorkerLive } from "../src/jobs/worker.js"
import { parseConfig } from "../src/platform/config.js"
import { startEmbeddedPostgres } from "../src/platform/embedded-postgres.js"
import { Events } from "../src/platform/events/service.js"
import { AppLayer, prepareDatabase } from "../src/runtime.js"
import { bootstrap } from "../src/tenancy/bootstrap.js"
import { Webhooks } from "../src/webhooks/service.js"

const EVENTS = Number(process.env["BENCH_EVENTS"] ?? 10_000)
const CONCURRENCY = Number(process.env["BENCH_CONCURRENCY"] ?? 16)
const EMITTERS = Number(process.env["BENCH_EMITTERS"] ?? 8)
const SUBSCRIPTIONS = 3

const dataDir = mkdtempSync(join(tmpdir(), "bench-webhooks-"))
const pg = process.env["DATABASE_URL"] ? undefined : await startEmbeddedPostgres(dataDir, { persistent: false })
const databaseUrl = process.env["DATABASE_URL"] ?? pg!.url
const masterKey = randomBytes(32).toString("base64url")
const config = parseConfig({
  DATABASE_URL: databaseUrl, MASTER_KEY: masterKey, DATA_DIR: dataDir, LOG_REQUESTS: "false", WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
})
const keyring = { current: Buffer.from(masterKey, "base64url") }

// The receiver: arrival time per delivery, lag from the envelope's occurredAt.
const lags: Array<number> = []
const perEvent = new Map<string, number>()
let fullyDelivered = 0
let lastArrival = 0
let resolveDone: () => void = () => {}
const done = new Promise<void>((resolve) => { resolveDone = resolve })
const receiver = createServer((req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (c: Buffer) => chunks.push(c))
  req.on("end", () => {
    const now = Date.now()
    res.writeHead(204).end()
    const envelope = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { eventId: string; occurredAt: string }
    lags.push(now - Date.parse(envelope.occurredAt))
    const n = (perEvent.get(envelope.eventId) ?? 0) + 1
    perEvent.set(envelope.eventId, n)
    if (n === SUBSCRIPTIONS) {
      fullyDelivered++
      lastArrival = now
      if (fullyDelivered === EVENTS) resolveDone()
    }
  })
})
await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`

const app = AppLayer(config, databaseUrl, keyring, { maxConnections: CONCURRENCY + EMITTERS + 4 })
const quiet = Layer.succeed(References.MinimumLogLevel, "Warn")
const runtime = ManagedRuntime.make(Layer.mergeAll(app, quiet).pipe(Layer.provideMerge(quiet)) as Layer.Layer<any, unknown, never>)
await runtime.runPromise(prepareDatabase(databaseUrl, keyring))

const tenant = await runtime.runPromise(Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const b = yield* sql.withTransaction(bootstrap)
  const webhooks = yield* Webhooks
  for (let i = 0; i < SUBSCRIPTIONS; i++) {
    yield* sql.withTransaction(webhooks.create({
      workspaceId: b.workspace_id, actor: { type: "system" }, environmentId: b.environment_id,
      url: `${receiverUrl}?subscription=${i}`, eventTypes: ["user.created"],
    }))
  }
  return b
}))

// The worker pool (in this process), then the events.
const workerRuntime = ManagedRuntime.make(WorkerLive({ concurrency: CONCURRENCY, pollInterval: 1000 }).pipe(
  Layer.provide(Layer.mergeAll(app, quiet)), Layer.provide(quiet)) as Layer.Layer<any, unknown, never>)
await workerRuntime.runPromise(Effect.void)

const emitOne = (i: number) => Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const events = yield* Events
  yield* sql.withTransaction(events.emit({
    type: "user.created", workspaceId: tenant.workspace_id, environmentId: tenant.environment_id, actor: { type: "system" },
    payload: { userId: `usr_${[...i.toString(32).padStart(32, "0")].map((c) => "abcdefghijklmnopqrstuvwxyz234567"[parseInt(c, 32)]).join("")}`, method: "email_otp" },
  }))
})

console.log(`webhooks fan-out: ${EVENTS} events x ${SUBSCRIPTIONS} subscriptions, worker concurrency ${CONCURRENCY}, ${EMITTERS} emitters`)
const started = Date.now()
let next = 0
await Promise.all(Array.from({ length: EMITTERS }, () => runtime.runPromise(Effect.gen(function* () {
  while (next < EVENTS) yield* emitOne(next++)
}))))
const emittedIn = Date.now() - started
const timeout = setTimeout(() => { console.error(`timed out: ${fullyDelivered}/${EVENTS} events delivered`); process.exit(1) }, 15 * 60_000)
await done
clearTimeout(timeout)

const elapsed = lastArrival - started
const sorted = [...lags].sort((a, b) => a - b)
const pct = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
// The receiver may count a request before its worker has settled the record: wait for that.
const states = await runtime.runPromise(Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (let i = 0; i < 100; i++) {
    const [pending] = yield* sql<{ n: number }>`select count(*)::int as n from webhook_deliveries where status = 'pending'`
    if (pending!.n === 0) break
    yield* Effect.sleep("100 millis")
  }
  return yield* sql<{ status: string; n: number }>`select status, count(*)::int as n from webhook_deliveries group by status order by status`
}))
console.log(`emitted ${EVENTS} events in ${emittedIn} ms (${Math.round(EVENTS / (emittedIn / 1000))} events/s into the outbox)`)
console.log(`delivered ${EVENTS} events x ${SUBSCRIPTIONS} = ${lags.length} deliveries in ${elapsed} ms`)
console.log(`throughput: ${Math.round(EVENTS / (elapsed / 1000))} events/s fully delivered, ${Math.round(lags.length / (elapsed / 1000))} deliveries/s`)
console.log(`end-to-end lag (occurredAt -> receiver): p50 ${pct(50)} ms, p99 ${pct(99)} ms, max ${sorted[sorted.length - 1]} ms`)
console.log(`duplicate sends: ${lags.length - EVENTS * SUBSCRIPTIONS}; records: ${states.map((s) => `${s.status} ${s.n}`).join(", ")}`)

await workerRuntime.dispose()
await runtime.dispose()
receiver.close()
await pg?.stop()
rmSync(dataDir, { recursive: true, force: true })
process.exit(0)
