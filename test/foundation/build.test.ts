import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { inject } from "vitest"
import { freePort } from "../../src/platform/free-port.js"
import { send } from "../support/http.js"
import { scratchDatabase } from "../support/template.js"

const ROOT = process.cwd()
// Its own output folder beside dist/ (two levels below the root, as dist/ is), so the
// build under test resolves sql/ and node_modules exactly as `npm run build` output does.
const OUT = join(ROOT, `.dist-test-${process.pid}`)
const MASTER_KEY = randomBytes(32).toString("base64url")
const METRICS_TOKEN = randomBytes(24).toString("base64url")

interface Running {
  readonly child: ChildProcess
  stdout: string
  stderr: string
  readonly exited: Promise<number | null>
}

/** Plain `node` on the compiled file: no TypeScript loader, no NODE_OPTIONS. */
const runCompiled = (entry: string, args: ReadonlyArray<string>, env: Record<string, string>): Running => {
  const child = spawn(process.execPath, [join(OUT, entry), ...args], {
    env: { PATH: process.env["PATH"]!, HOME: process.env["HOME"] ?? "/root", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  })
  const running: Running = {
    child,
    stdout: "",
    stderr: "",
    exited: new Promise((resolve) => child.on("exit", resolve)),
  }
  child.stdout!.on("data", (c: Buffer) => {
    running.stdout += c
  })
  child.stderr!.on("data", (c: Buffer) => {
    running.stderr += c
  })
  return running
}

const waitFor = async (what: string, check: () => Promise<boolean> | boolean, running: ReadonlyArray<Running>) => {
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    if (await check()) return
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error(`${what} not reached: ${running.map((r) => r.stdout + r.stderr).join("\n")}`)
}

describe("compiled artefact (npm run build; npm run server / npm run worker)", () => {
  let dbUrl: string
  let port: number
  const processes: Array<Running> = []

  beforeAll(() => {
    // The commands of `npm run build`, into this file's own folder.
    const scripts = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).scripts
    expect(scripts.build).toBe("tsc -p tsconfig.build.json && node scripts/copy-assets.mjs && npm run build:console")
    // The install step builds the admin console too (web/console/dist), so a fresh clone serves it
    // (scripts/prepare.mjs; skipped when development dependencies are omitted: test/ship).
    expect(scripts.prepare).toBe("node scripts/prepare.mjs")
    expect(scripts.server).toBe("exec node dist/main.js")
    expect(scripts.worker).toBe("exec node dist/worker.js")
    execFileSync(join(ROOT, "node_modules/.bin/tsc"), ["-p", "tsconfig.build.json", "--outDir", OUT], {
      cwd: ROOT,
      stdio: "pipe",
    })
    execFileSync(process.execPath, ["scripts/copy-assets.mjs", OUT], { cwd: ROOT, stdio: "pipe" })
  }, 120_000)

  // biome-ignore lint/suspicious/noDuplicateTestHooks: two steps with their own timeouts, the build and then the database
  beforeAll(async () => {
    // An empty database: the compiled server must find and apply the migrations itself.
    dbUrl = (await scratchDatabase(inject("serverUrl"), inject("templateDb"), "build")).url
    port = await freePort()
  })

  afterAll(async () => {
    for (const p of processes) if (p.child.exitCode === null) p.child.kill("SIGKILL")
    rmSync(OUT, { recursive: true, force: true })
  })

  it("`npm run server` / `npm run worker` without a build stop with one line asking for it", () => {
    let failure: { status: number; stderr: Buffer } | undefined
    try {
      execFileSync(process.execPath, [join(ROOT, "scripts/check-build.mjs")], {
        cwd: mkdtempSync(join(tmpdir(), "authservice-nobuild-")),
        stdio: "pipe",
      })
    } catch (e) {
      failure = e as { status: number; stderr: Buffer }
    }
    expect(failure?.status).toBe(1)
    expect(failure?.stderr.toString()).toBe(
      "authservice: dist/main.js is missing; run `npm run build` first (or `npm start` for development)\n",
    )
    expect(JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).scripts).toMatchObject({
      preserver: "node scripts/check-build.mjs",
      preworker: "node scripts/check-build.mjs",
    })
  })

  it("emits every entry point and the files read at run time", () => {
    for (const file of [
      "main.js",
      "worker.js",
      "start.js",
      "cli.js",
      "hosted-login/assets/login.js",
      "hosted-login/assets/login.css",
      "passkeys/hosted-login/passkey.js",
      // The API reference's Swagger UI (a development dependency, copied into the build).
      "openapi/swagger-ui/swagger-ui-bundle.js",
      "openapi/swagger-ui/swagger-ui.css",
    ]) {
      expect(existsSync(join(OUT, file)), file).toBe(true)
    }
  })

  it("server and worker run with plain node against an empty database: migrations applied, /readyz 200, assets served, clean exit on SIGTERM", async () => {
    const env = {
      DATABASE_URL: dbUrl,
      MASTER_KEY,
      PORT: String(port),
      LOG_REQUESTS: "false",
      METRICS_TOKEN: METRICS_TOKEN,
    }
    const serverMetrics = await freePort()
    const server = runCompiled("main.js", [], { ...env, METRICS_PORT: String(serverMetrics) })
    processes.push(server)
    await waitFor(
      "/readyz 200",
      () =>
        send(port, `api.localhost:${port}`, "/readyz").then(
          (r) => r.status === 200,
          () => false,
        ),
      [server],
    )
    // Taken just before the worker binds it: chosen seconds earlier, the port was once given to
    // another process meanwhile (EADDRINUSE at the worker's start).
    const workerMetrics = await freePort()
    const worker = runCompiled("worker.js", [], { ...env, METRICS_PORT: String(workerMetrics) })
    processes.push(worker)
    await waitFor("worker running", () => worker.stdout.includes("authservice worker: running"), [worker])

    // METRICS_PORT: each process serves /metrics there (bearer METRICS_TOKEN), the Management host no longer does.
    const bearer = { authorization: `Bearer ${METRICS_TOKEN}` }
    expect((await send(port, `api.localhost:${port}`, "/metrics", { headers: bearer })).status).toBe(404)
    expect((await send(serverMetrics, "127.0.0.1", "/metrics")).status).toBe(401)
    expect((await send(serverMetrics, "127.0.0.1", "/other", { headers: bearer })).status).toBe(404)
    const serverScrape = await send(serverMetrics, "127.0.0.1", "/metrics", { headers: bearer })
    expect(serverScrape.status).toBe(200)
    expect(serverScrape.text).toContain(
      `authservice_http_requests_total{surface="probe",method="GET",route="/readyz",status="200"}`,
    )
    const workerScrape = await send(workerMetrics, "127.0.0.1", "/metrics", { headers: bearer })
    expect(workerScrape.status).toBe(200)
    expect(workerScrape.text).toMatch(/authservice_worker_db_pool_connections\{state="total"\} [1-9]/)
    expect(workerScrape.text).toContain(`authservice_job_queue_depth{state="due"}`)

    // The compiled CLI creates an Environment; its Hosted Login assets come from dist/.
    const cli = runCompiled("cli.js", ["bootstrap", "--json"], env)
    expect(await cli.exited).toBe(0)
    const boot = JSON.parse(cli.stdout.trim())
    for (const path of ["/login/assets/login.js", "/login/assets/login.css", "/login/assets/passkey.js"]) {
      const asset = await send(port, boot.interaction_domain, path)
      expect(asset.status, path).toBe(200)
      expect(asset.text.length).toBeGreaterThan(100)
    }
    // The admin console, as the install step built it, with its strict CSP.
    const consolePage = await send(port, `api.localhost:${port}`, "/console/")
    expect(consolePage.status).toBe(200)
    expect(consolePage.headers["content-security-policy"]).toContain("script-src 'self'")
    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(consolePage.text)?.[1]
    expect((await send(port, `api.localhost:${port}`, script!)).status).toBe(200)
    const discovery = await send(
      port,
      `localhost:${port}`,
      `/e/${boot.environment_id}/.well-known/openid-configuration`,
    )
    expect(discovery.status).toBe(200)
    expect(discovery.json.issuer).toBe(boot.issuer)

    server.child.kill("SIGTERM")
    worker.child.kill("SIGTERM")
    expect(await server.exited).toBe(0)
    expect(await worker.exited).toBe(0)
    expect(server.stderr + worker.stderr).toBe("")
  }, 120_000)
})
