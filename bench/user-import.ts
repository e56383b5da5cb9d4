// Benchmark: user import of a 100,000-row CSV through the real API and the real worker
// (target, docs/decisions/user-import-export.md: under 60 s, progress visible, memory bounded). The server (src/main.ts)
// and one worker (src/worker.ts) run in their own processes, as in production; a local HTTP
// server generates the CSV row by row (never held in memory, with backpressure).
// Reports: time from POST to `completed`, rows/s, the progress seen while it ran, the peak
// RSS (VmHWM) of the server and the worker, and the load average (the machine is shared).
//
// Run: npx tsx bench/user-import.ts
//   BENCH_ROWS (100000)  BENCH_WORKER_HEAP_MB caps the worker's V8 old space (--max-old-space-size), to show
//   that the import runs in a bounded heap (the peak RSS otherwise reflects V8's lazy collection)
//   DATABASE_URL an existing, empty Postgres database instead of an embedded one
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdtempSync, readFileSync } from "node:fs"
import { createServer, request } from "node:http"
import type { AddressInfo } from "node:net"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { Readable } from "node:stream"
import { startEmbeddedPostgres } from "../src/platform/embedded-postgres.js"
import { freePort } from "../src/platform/free-port.js"
import { database } from "./management-support.js"
import { bootstrap, stopChild, waitFor } from "./support.js"

const ROWS = Number(process.env["BENCH_ROWS"] ?? 100_000)

/** One CSV row; a few rows are invalid or repeated so row errors are part of the work. */
const row = (i: number) =>
  i % 10_000 === 5000
    ? `not-an-email-${i},Broken,true,en-US\n`
    : i % 10_000 === 7000
      ? `bench-${i - 1}@example.com,Repeated,false,en-US\n`
      : `bench-${i}@example.com,Bench User ${i},${i % 2 === 0},en-US\n`

const csvStream = () => {
  let i = 0
  return new Readable({
    read() {
      if (i === 0) this.push("email,name,email_verified,locale\n")
      // 500 rows per read: the stream's buffer, not the file, bounds the memory.
      let chunk = ""
      for (let n = 0; n < 500 && i < ROWS; n++) chunk += row(++i)
      if (chunk.length > 0) this.push(chunk)
      if (i >= ROWS) this.push(null)
    },
  })
}

/** Peak resident set size of a process, from /proc (Linux). */
const peakRssMb = (pid: number) => {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))
  return match ? Math.round(Number(match[1]) / 1024) : NaN
}

/** Our entry points run under node with tsx's loader (not the tsx launcher), so the pid is the process that works. */
const startEntry = (entry: string, env: Record<string, string>, nodeOptions: Array<string> = []) =>
  spawn(process.execPath, [...nodeOptions, "--import", "tsx", entry], { env, stdio: ["ignore", "pipe", "inherit"] })
const HEAP_MB = process.env["BENCH_WORKER_HEAP_MB"]

const main = async () => {
  let databaseUrl = process.env["DATABASE_URL"]
  let stopDb: (() => Promise<void>) | undefined
  if (!databaseUrl) {
    const pg = await startEmbeddedPostgres(mkdtempSync(join(tmpdir(), "authservice-bench-import-")), {
      persistent: false,
    })
    databaseUrl = pg.url
    stopDb = pg.stop
  }
  const port = await freePort()
  const env = {
    PATH: process.env["PATH"]!,
    PORT: String(port),
    DATABASE_URL: databaseUrl,
    MASTER_KEY: randomBytes(32).toString("base64url"),
    LOG_REQUESTS: "false",
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    DATA_DIR: mkdtempSync(join(tmpdir(), "authservice-bench-data-")),
  }
  const children: Array<ChildProcess> = []
  const source = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/csv" })
    csvStream().pipe(res)
  })
  try {
    const server = startEntry("src/main.ts", env)
    children.push(server)
    await waitFor(port, `api.localhost:${port}`, "/readyz")
    const worker = startEntry("src/worker.ts", env, HEAP_MB ? [`--max-old-space-size=${HEAP_MB}`] : [])
    children.push(worker)
    await new Promise<void>((resolve, reject) => {
      worker.stdout!.on("data", (c: Buffer) => {
        if (c.toString().includes("worker: running")) resolve()
      })
      worker.on("exit", (code) => reject(new Error(`worker exited with ${code}`)))
    })
    const tenant = bootstrap(env)
    await new Promise<void>((resolve) => source.listen(0, "127.0.0.1", resolve))
    const sourceUrl = `http://127.0.0.1:${(source.address() as AddressInfo).port}/users.csv`
    const headers = {
      host: `api.localhost:${port}`,
      authorization: `Bearer ${tenant.api_key}`,
      "content-type": "application/json",
    }
    // node:http, not fetch: fetch does not send our Host header, which picks the Management API.
    const api = (path: string, init: { method?: string; body?: unknown } = {}) =>
      new Promise<{ status: number; json: Record<string, any> }>((resolve, reject) => {
        const req = request({ host: "127.0.0.1", port, path, method: init.method ?? "GET", headers }, (res) => {
          const chunks: Array<Buffer> = []
          res.on("data", (c: Buffer) => chunks.push(c))
          res.on("end", () =>
            resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString("utf8")) }),
          )
        })
        req.on("error", reject)
        req.end(init.body === undefined ? undefined : JSON.stringify(init.body))
      })

    const idleWorkerMb = peakRssMb(worker.pid!)
    const loadBefore = loadavg()
    console.log(`user import: ${ROWS} CSV rows through POST /v1/user-import-jobs and one worker process`)
    const started = Date.now()
    const created = await api("/v1/user-import-jobs", {
      method: "POST",
      body: { environment_id: tenant.environment_id, format: "csv", source_url: sourceUrl },
    })
    if (created.status !== 201) throw new Error(`POST answered ${created.status}: ${JSON.stringify(created.json)}`)
    console.log(`POST answered 201 ${created.json["status"]} in ${Date.now() - started} ms`)
    let job = created.json
    let lastPrint = 0
    while (job["status"] === "processing" || job["status"] === "pending") {
      await new Promise((resolve) => setTimeout(resolve, 250))
      job = (await api(`/v1/user-import-jobs/${created.json["id"]}`)).json
      if (Date.now() - lastPrint >= 5000) {
        lastPrint = Date.now()
        const done = job["imported_count"] + job["skipped_count"] + job["failed_count"]
        console.log(
          `  ${((Date.now() - started) / 1000).toFixed(1)} s: ${job["status"]}, ${done}/${job["total_rows"]} rows (imported ${job["imported_count"]})`,
        )
      }
    }
    const seconds = (Date.now() - started) / 1000
    const loadAfter = loadavg()
    const db = database(databaseUrl)
    const [count] = await db.query<{ users: number; events: number }>(
      `select
        (select count(*)::int from users where environment_id = $1) as users,
        (select count(*)::int from event_outbox where environment_id = $1 and type = 'user.created') as events`,
      [tenant.environment_id],
    )
    await db.close()
    console.log(
      `result: ${job["status"]}; total_rows ${job["total_rows"]}, imported ${job["imported_count"]}, skipped ${job["skipped_count"]}, ` +
        `failed ${job["failed_count"]}; users in the database ${count!.users}, user.created events ${count!.events}`,
    )
    console.log(`time ${seconds.toFixed(1)} s, ${Math.round(ROWS / seconds)} rows/s`)
    console.log(
      `peak RSS: worker ${peakRssMb(worker.pid!)} MB${HEAP_MB ? ` (old space capped at ${HEAP_MB} MB)` : ""} (${idleWorkerMb} MB before the import), server ${peakRssMb(server.pid!)} MB`,
    )
    console.log(
      `load average (1/5/15 min): before ${loadBefore.map((l) => l.toFixed(2)).join(" ")}, after ${loadAfter.map((l) => l.toFixed(2)).join(" ")}`,
    )
    if (job["status"] !== "completed") process.exitCode = 1
  } finally {
    source.close()
    for (const child of children) await stopChild(child)
    await stopDb?.()
  }
}

await main()
