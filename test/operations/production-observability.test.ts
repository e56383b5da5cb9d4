import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { afterAll, describe, expect, inject, it } from "vitest"
import { freePort } from "../../src/platform/free-port.js"
import { METRICS_NOT_SERVED_WARNING } from "../../src/http/metrics.js"
import { send } from "../support/http.js"
import { cloneDatabase } from "../support/template.js"
import { startOtlpCollector, startUnreachableCollector } from "./otlp-collector.js"

// Production processes as an operator runs them (docs/decisions/observability.md): probes on
// any Host, /metrics never open on the public host, LOG_LEVEL, one JSON line format on stdout
// for every line (graphile-worker's included), a clean shutdown line on SIGINT/SIGTERM, and
// an OTLP collector that cannot be reached reported once.

// Node with tsx as a loader, not the tsx CLI (which SIGKILLs a child slow to acknowledge a signal).
const NODE_ARGS = ["--import", "tsx"]
const MASTER_KEY = randomBytes(32).toString("base64url")
const METRICS_TOKEN = randomBytes(24).toString("base64url")

interface Proc {
  readonly child: ChildProcess
  readonly out: { stdout: string; stderr: string }
  readonly exited: Promise<number | null>
  readonly port: number
}
const procs: Array<Proc> = []
afterAll(() => {
  for (const p of procs) if (p.child.exitCode === null) p.child.kill("SIGKILL")
})

const production = async (entry: string, extra: Record<string, string> = {}): Promise<Proc> => {
  const database = await cloneDatabase(inject("serverUrl"), inject("templateDb"))
  const port = await freePort()
  const child = spawn(process.execPath, [...NODE_ARGS, entry], {
    env: {
      PATH: process.env["PATH"]!,
      HOME: process.env["HOME"] ?? "/root",
      NODE_ENV: "production",
      DATABASE_URL: database.url,
      MASTER_KEY,
      PORT: String(port),
      MAIL_ALLOW_DEV_MAILER: "true",
      PLATFORM_DOMAIN: "example.test",
      CANONICAL_ISSUER_HOST: "auth.example.test",
      MANAGEMENT_HOST: "api.example.test",
      ...extra,
    },
    stdio: ["ignore", "pipe", "pipe"],
  })
  const out = { stdout: "", stderr: "" }
  child.stdout!.on("data", (c: Buffer) => {
    out.stdout += c
  })
  child.stderr!.on("data", (c: Buffer) => {
    out.stderr += c
  })
  const p = { child, out, port, exited: new Promise<number | null>((resolve) => child.on("exit", resolve)) }
  procs.push(p)
  return p
}

const until = async (what: string, p: Proc, check: () => Promise<boolean> | boolean, timeoutMs = 60_000) => {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline || p.child.exitCode !== null) throw new Error(`${what}: ${p.out.stdout}\n${p.out.stderr}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

const get = (p: Proc, host: string, path: string, headers: Record<string, string> = {}) =>
  send(p.port, host, path, { headers })

const listening = (p: Proc) =>
  until("the server to listen", p, () =>
    get(p, "localhost", "/healthz").then(
      (r) => r.status === 200,
      () => false,
    ),
  )

/** The process's stdout as JSON lines: every line must parse. */
const jsonLines = (p: Proc) =>
  p.out.stdout
    .trim()
    .split("\n")
    .map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>
      } catch {
        throw new Error(`not a JSON line: ${line}`)
      }
    })

const stop = async (p: Proc, signal: NodeJS.Signals) => {
  p.child.kill(signal)
  return p.exited
}

describe("probes and metrics of a production server", () => {
  it("/healthz and /readyz answer on any Host, Host: localhost included, and say only ok / ready; /metrics is not served without METRICS_PORT or METRICS_TOKEN, which one warning says", async () => {
    const p = await production("src/main.ts", { LOG_LEVEL: "info" })
    await listening(p)
    for (const host of ["localhost", `127.0.0.1:${p.port}`, "auth.example.test", "unknown.example.org"]) {
      const health = await get(p, host, "/healthz")
      expect([health.status, health.text], host).toEqual([200, '{"status":"ok"}'])
      const ready = await get(p, host, "/readyz")
      expect([ready.status, ready.text], host).toEqual([200, '{"status":"ready"}'])
    }
    // Any other path on an unknown host is still unknown.
    expect((await get(p, "localhost", "/v1/users")).status).toBe(404)
    // Never open on the public host in production: not even with a token, since none is configured.
    expect((await get(p, "api.example.test", "/metrics")).status).toBe(404)
    expect((await get(p, "api.example.test", "/metrics", { authorization: "Bearer x" })).status).toBe(404)
    expect(await stop(p, "SIGTERM")).toBe(0)
    const lines = jsonLines(p)
    expect(lines.filter((l) => l["msg"] === METRICS_NOT_SERVED_WARNING).map((l) => l["level"])).toEqual(["warn"])
    // The probe requests are logged under their own surface, with their path as the route.
    expect(lines.filter((l) => l["msg"] === "request" && l["route"] === "/healthz")[0]).toMatchObject({
      surface: "probe",
      status: 200,
    })
    expect(lines.at(-1)).toMatchObject({ level: "info", msg: "stopped", process: "server" })
    expect(p.out.stderr).toBe("")
  }, 120_000)

  it("METRICS_PORT serves the standard and our metrics on a listener of its own, and the Management host stops serving them; METRICS_TOKEN alone keeps them on the Management host behind the token", async () => {
    const metricsPort = await freePort()
    const [own, token] = await Promise.all([
      production("src/main.ts", { METRICS_PORT: String(metricsPort) }),
      production("src/main.ts", { METRICS_TOKEN }),
    ])
    await Promise.all([listening(own), listening(token)])
    expect((await get(own, "api.example.test", "/metrics")).status).toBe(404)
    const scraped = await send(metricsPort, "localhost", "/metrics")
    expect(scraped.status).toBe(200)
    expect(scraped.text).toMatch(/^# TYPE process_cpu_seconds_total counter$/m)
    expect(scraped.text).toMatch(/^# TYPE authservice_http_requests_total counter$/m)
    expect((await get(token, "api.example.test", "/metrics")).status).toBe(401)
    const authorized = await get(token, "api.example.test", "/metrics", { authorization: `Bearer ${METRICS_TOKEN}` })
    expect(authorized.status).toBe(200)
    expect(authorized.text).toMatch(/^nodejs_heap_size_used_bytes \d+/m)
    // Only the Management host, never an issuer host.
    expect(
      (await get(token, "auth.example.test", "/metrics", { authorization: `Bearer ${METRICS_TOKEN}` })).status,
    ).toBe(404)
    await Promise.all([stop(own, "SIGTERM"), stop(token, "SIGTERM")])
    for (const p of [own, token]) expect(jsonLines(p).some((l) => l["msg"] === METRICS_NOT_SERVED_WARNING)).toBe(false)
  }, 120_000)
})

describe("production logs of every process", () => {
  it("the worker: graphile-worker's own lines are JSON lines on stdout like the rest (LOG_LEVEL=debug shows them); SIGINT ends with one 'stopped' line, exit 0, no stack trace", async () => {
    const p = await production("src/worker.ts", { LOG_LEVEL: "debug" })
    await until("graphile-worker to report", p, () => p.out.stdout.includes('"source":"graphile-worker"'))
    expect(await stop(p, "SIGINT")).toBe(0)
    const lines = jsonLines(p)
    for (const line of lines) {
      expect(Object.keys(line)).toEqual(expect.arrayContaining(["level", "msg"]))
      expect(["debug", "info", "warn", "error"]).toContain(line["level"])
    }
    const graphile = lines.filter((l) => l["source"] === "graphile-worker")
    expect(graphile.length).toBeGreaterThan(0)
    for (const line of graphile) expect(line["time"]).toMatch(/^\d{4}-\d\d-\d\dT/)
    expect(lines.at(-1)).toMatchObject({ level: "info", msg: "stopped", process: "worker" })
    expect(lines.filter((l) => l["level"] === "error")).toEqual([])
    expect(p.out.stdout + p.out.stderr).not.toMatch(/^\s+at /m)
    expect(p.out.stderr).toBe("")
  }, 120_000)

  it("development (`npm start`: server and worker in one process): readable lines, not JSON; Ctrl-C (SIGINT) ends with a 'stopped' line, exit 0, no stack trace", async () => {
    const p = await production("src/start.ts", { NODE_ENV: "development", LOG_LEVEL: "debug" })
    await listening(p)
    await until("graphile-worker to report", p, () => p.out.stdout.includes("[worker] debug:"))
    expect(await stop(p, "SIGINT")).toBe(0)
    const output = p.out.stdout + p.out.stderr
    expect(output).not.toMatch(/^\s+at /m)
    expect(output).not.toMatch(/^\{/m)
    expect(p.out.stdout).toMatch(/stopped/)
    expect(p.out.stderr).toBe("")
  }, 120_000)

  it("LOG_LEVEL=warn: no info lines (requests, graphile-worker, stopped), warnings still; an invalid LOG_LEVEL is refused at start naming the values", async () => {
    const p = await production("src/start.ts", { LOG_LEVEL: "warn" })
    await listening(p)
    await get(p, "auth.example.test", "/healthz")
    expect(await stop(p, "SIGTERM")).toBe(0)
    const lines = jsonLines(p).filter((l) => l["msg"] !== "listening" && l["msg"] !== "worker running")
    expect(lines.length).toBeGreaterThan(0)
    expect(new Set(lines.map((l) => l["level"])), JSON.stringify(lines)).toEqual(new Set(["warn"]))
    expect(p.out.stderr).toBe("")

    const bad = await production("src/main.ts", { LOG_LEVEL: "verbose" })
    expect(await bad.exited).toBe(1)
    expect(bad.out.stderr.trim()).toBe('authservice: LOG_LEVEL must be one of debug, info, warn, error (got "verbose")')
  }, 120_000)
})

describe("the OTel SDK's environment in a production process", () => {
  it("OTEL_EXPORTER_OTLP_HEADERS are sent with every export (a vendor's API key), over http/protobuf by default", async () => {
    const collector = await startOtlpCollector()
    try {
      const p = await production("src/main.ts", {
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_EXPORTER_OTLP_HEADERS: "x-api-key=k3y%3D1,x-tenant=auth",
        OTEL_BSP_SCHEDULE_DELAY: "100",
      })
      await listening(p)
      await get(p, "auth.example.test", "/healthz")
      await until("an export", p, () => collector.exports.length > 0)
      expect(await stop(p, "SIGTERM")).toBe(0)
      for (const e of collector.exports) {
        expect([e.path, e.contentType, e.headers["x-api-key"], e.headers["x-tenant"]]).toEqual([
          "/v1/traces",
          "application/x-protobuf",
          "k3y=1",
          "auth",
        ])
      }
      expect(p.out.stderr).toBe("")
    } finally {
      await collector.close()
    }
  }, 120_000)
})

describe("an OTLP collector that cannot be reached", () => {
  it("one warning line, then backoff: no line per failed batch, few connection attempts; one line when it is back", async () => {
    const collector = await startUnreachableCollector()
    try {
      const p = await production("src/main.ts", {
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        // A batch every 100 ms, each export given up after 1 s (the exporter retries within
        // that time): measured, 22 connections in 8 s without the backoff, 5 with it.
        OTEL_BSP_SCHEDULE_DELAY: "100",
        OTEL_EXPORTER_OTLP_TIMEOUT: "1000",
      })
      await listening(p)
      const until8s = Date.now() + 8_000
      while (Date.now() < until8s) {
        await get(p, "auth.example.test", "/healthz")
        await new Promise((r) => setTimeout(r, 50))
      }
      const attempts = collector.connections()
      // The collector comes back: the next export after the pause succeeds, and one line says so.
      collector.recover()
      await until("the export to succeed again", p, () => p.out.stdout.includes("traces are exported again"), 70_000)
      expect(await stop(p, "SIGTERM")).toBe(0)
      expect(jsonLines(p).filter((l) => String(l["msg"]).startsWith("traces are exported again"))).toEqual([
        expect.objectContaining({ level: "info", msg: `traces are exported again to ${collector.url}/v1/traces` }),
      ])
      const warnings = jsonLines(p).filter((l) => String(l["msg"]).startsWith("traces cannot be exported"))
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toMatchObject({ level: "warn" })
      expect(String(warnings[0]!["msg"])).toContain(collector.url)
      expect(attempts).toBeGreaterThanOrEqual(1)
      expect(attempts).toBeLessThanOrEqual(10)
      expect(p.out.stderr).toBe("")
    } finally {
      await collector.close()
    }
  }, 120_000)
})
