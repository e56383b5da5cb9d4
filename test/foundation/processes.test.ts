import { spawn } from "node:child_process"
import { connect } from "node:net"
import { randomBytes } from "node:crypto"
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort } from "../../src/platform/free-port.js"
import { send } from "../support/http.js"
import { type TestApp, startApp } from "../support/app.js"
import { type Outcome, runEntry, watchChild } from "../support/processes.js"

const TSX = join(process.cwd(), "node_modules/.bin/tsx")

/** The environment `npm start` runs with in these tests: its own port and data directory. */
const startEnv = (port: number, dataDir: string) => ({
  PATH: process.env["PATH"]!,
  PORT: String(port),
  DATA_DIR: dataDir,
  LOG_REQUESTS: "false",
})

/** Polls /readyz until it answers 200 (true) or a minute has passed (false). */
const untilReady = async (port: number) => {
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    const ready = await send(port, `api.localhost:${port}`, "/readyz").then(
      (r) => r.status === 200,
      () => false,
    )
    if (ready) return true
    await new Promise((r) => setTimeout(r, 250))
  }
  return false
}

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const oneLine = (outcome: Outcome) => {
  expect(outcome.code).toBe(1)
  const lines = outcome.stderr.trim().split("\n")
  expect(lines).toHaveLength(1)
  expect(lines[0]).toMatch(/^authservice: /)
  expect(outcome.stderr).not.toMatch(/\n\s+at /)
  return lines[0]!
}

describe("bad configuration stops the process with one clear line", () => {
  it("an invalid PORT", async () => {
    expect(oneLine(await runEntry("src/main.ts", [], { PORT: "eighty" }))).toContain("PORT must be a TCP port")
  })

  it("a missing MASTER_KEY in production", async () => {
    const line = oneLine(
      await runEntry("src/main.ts", [], {
        NODE_ENV: "production",
        DATABASE_URL: "postgres://127.0.0.1:1/x",
        PLATFORM_DOMAIN: "auth.example.com",
        CANONICAL_ISSUER_HOST: "id.example.com",
        MANAGEMENT_HOST: "api.example.com",
      }),
    )
    expect(line).toContain("MASTER_KEY is required")
  })

  it("embedded Postgres in production: `npm start` without DATABASE_URL is refused before anything starts", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "authservice-prod-"))
    const line = oneLine(
      await runEntry("src/start.ts", [], {
        NODE_ENV: "production",
        MASTER_KEY: randomBytes(32).toString("base64url"),
        DATA_DIR: dataDir,
        PORT: String(await freePort()),
      }),
    )
    expect(line).toBe(
      "authservice: DATABASE_URL is required when NODE_ENV=production (embedded Postgres is for development only); set it to your Postgres server",
    )
    // Nothing was initialised under DATA_DIR: no cluster, no generated master key.
    expect(existsSync(join(dataDir, "postgres"))).toBe(false)
    expect(existsSync(join(dataDir, "master.key"))).toBe(false)
    rmSync(dataDir, { recursive: true, force: true })
  })

  it("an unreachable DATABASE_URL", async () => {
    const port = await freePort()
    const line = oneLine(
      await runEntry("src/main.ts", [], {
        DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/nowhere`,
        MASTER_KEY: randomBytes(32).toString("base64url"),
        PORT: String(await freePort()),
      }),
    )
    expect(line).toMatch(/cannot use the database/)
    expect(line).toContain("DATABASE_URL")
  })
})

describe("against a running database", () => {
  let app: TestApp
  beforeAll(async () => {
    app = await startApp()
  })
  afterAll(async () => {
    await app?.close()
  })

  it("a wrong MASTER_KEY is refused at start", async () => {
    const line = oneLine(
      await runEntry("src/main.ts", [], {
        DATABASE_URL: app.databaseUrl,
        MASTER_KEY: randomBytes(32).toString("base64url"),
        PORT: String(await freePort()),
      }),
    )
    expect(line).toContain("MASTER_KEY does not match")
  })

  it("`cli bootstrap --json` prints one JSON object whose key authenticates and whose issuer serves discovery", async () => {
    const env = {
      DATABASE_URL: app.databaseUrl,
      MASTER_KEY: Buffer.from(app.config.masterKey!).toString("base64url"),
      PORT: String(app.port),
    }
    const first = await runEntry("src/cli.ts", ["bootstrap", "--json"], env)
    expect(first.code).toBe(0)
    const lines = first.stdout.trim().split("\n")
    expect(lines).toHaveLength(1)
    const out = JSON.parse(lines[0]!)
    expect(Object.keys(out).sort()).toEqual([
      "api_key",
      "environment_id",
      "interaction_domain",
      "issuer",
      "management_url",
      "project_id",
      "workspace_id",
    ])
    expect(out.api_key).toMatch(/^sk_live_[A-Za-z0-9_-]{43}$/)
    expect(out.management_url).toBe(`http://api.localhost:${app.port}`)
    expect(out.interaction_domain).toBe(`env-${out.environment_id.slice(4)}.login.localhost:${app.port}`)
    const ws = await app.management(`/v1/workspaces/${out.workspace_id}`, { key: out.api_key })
    expect(ws.status).toBe(200)
    const discovery = await send(
      app.port,
      `localhost:${app.port}`,
      new URL(`${out.issuer}/.well-known/openid-configuration`).pathname,
    )
    expect(discovery.json.issuer).toBe(out.issuer)

    const second = JSON.parse((await runEntry("src/cli.ts", ["bootstrap", "--json"], env)).stdout.trim())
    expect(second.workspace_id).not.toBe(out.workspace_id)
    expect(second.api_key).not.toBe(out.api_key)
  })

  it("an unknown CLI command is refused with usage", async () => {
    const outcome = await runEntry("src/cli.ts", ["frobnicate"], {
      DATABASE_URL: app.databaseUrl,
      MASTER_KEY: Buffer.from(app.config.masterKey!).toString("base64url"),
    })
    // Wrong use: exit 2, the reason, every command (test/foundation/first-hour.test.ts has the rest).
    expect(outcome.code).toBe(2)
    expect(outcome.stderr).toContain('unknown command "frobnicate"')
    expect(outcome.stderr).toContain("usage: npm run cli -- <command>")
    expect(outcome.stderr).toContain("bootstrap [--json]")
  })
})

describe("npm start with embedded Postgres", () => {
  it("starts, answers /readyz, and shuts down cleanly on SIGTERM (Postgres stopped)", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "authservice-start-"))
    const port = await freePort()
    const child = spawn(TSX, ["src/start.ts"], {
      env: { PATH: process.env["PATH"]!, PORT: String(port), DATA_DIR: dataDir, LOG_REQUESTS: "false" },
      stdio: ["ignore", "pipe", "pipe"],
    })
    let stdout = ""
    child.stdout.on("data", (c: Buffer) => {
      stdout += c
    })
    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve))
    const deadline = Date.now() + 60_000
    let ready = false
    while (!ready && Date.now() < deadline) {
      ready = await send(port, `api.localhost:${port}`, "/readyz").then(
        (r) => r.status === 200,
        () => false,
      )
      if (!ready) await new Promise((r) => setTimeout(r, 250))
    }
    expect(ready).toBe(true)
    // The banner is written once the listener is up; it may trail the first answer slightly.
    while (!stdout.includes(`http://api.localhost:${port}/v1`) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50))
    expect(stdout).toContain(`http://api.localhost:${port}/v1`)
    expect(existsSync(join(dataDir, "postgres.url"))).toBe(true)
    expect(existsSync(join(dataDir, "master.key"))).toBe(true)
    // An in-flight request (its body still arriving) is answered after SIGTERM, not cut off.
    const env = JSON.parse(
      (await runEntry("src/cli.ts", ["bootstrap", "--json"], { PORT: String(port), DATA_DIR: dataDir })).stdout.trim(),
    )
    const socket = connect(port, "127.0.0.1")
    await new Promise((resolve) => socket.once("connect", resolve))
    let answer = ""
    socket.on("data", (c: Buffer) => {
      answer += c.toString("utf8")
    })
    const body = "grant_type=authorization_code&code=nope"
    socket.write(
      `POST /e/${env.environment_id}/oauth2/token HTTP/1.1\r\nHost: localhost:${port}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body.slice(0, 10)}`,
    )
    await new Promise((r) => setTimeout(r, 300))
    child.kill("SIGTERM")
    await new Promise((r) => setTimeout(r, 300))
    socket.write(body.slice(10))
    await new Promise((resolve) => socket.once("close", resolve))
    expect(answer).toMatch(/^HTTP\/1\.1 (400|401) /)
    expect(answer).toContain('"error":')
    expect(await exited).toBe(0)
    expect(existsSync(join(dataDir, "postgres", "postmaster.pid"))).toBe(false)
    expect(existsSync(join(dataDir, "postgres.url"))).toBe(false)
    rmSync(dataDir, { recursive: true, force: true })
  }, 90_000)

  it("run through npm: a SIGTERM sent to npm (a process manager stopping `npm start`) stops the service, nothing left running", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "authservice-start-"))
    const port = await freePort()
    // npm forwards the signal to its child: the script `exec`s node, so that child is our process
    // (without it, the child was a shell that died and left node running, re-parented to init).
    const npmCli = process.env["npm_execpath"]
    const child = npmCli
      ? spawn(process.execPath, [npmCli, "start"], { env: startEnv(port, dataDir), stdio: ["ignore", "pipe", "pipe"] })
      : spawn("npm", ["start"], { env: startEnv(port, dataDir), stdio: ["ignore", "pipe", "pipe"] })
    const { output, exited } = watchChild(child)
    try {
      expect(await untilReady(port), output()).toBe(true)
      child.kill("SIGTERM")
      expect(
        await Promise.race([exited, new Promise<"hung">((r) => setTimeout(() => r("hung"), 30_000))]),
        output(),
      ).toBe(0)
      // Stopped, not orphaned: the embedded Postgres was shut down by our process, the port is free.
      expect(existsSync(join(dataDir, "postgres", "postmaster.pid")), output()).toBe(false)
      expect(existsSync(join(dataDir, "postgres.url"))).toBe(false)
      await expect(send(port, `api.localhost:${port}`, "/healthz")).rejects.toThrow()
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 90_000)

  it("when the embedded Postgres dies under it, /metrics still answers and SIGTERM still ends the process within a bound", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "authservice-start-"))
    const port = await freePort()
    // As `npm start` runs it: node with tsx as a loader, so the signal reaches our runtime directly.
    const child = spawn(process.execPath, ["--import", "tsx", "src/start.ts"], {
      env: startEnv(port, dataDir),
      stdio: ["ignore", "pipe", "pipe"],
    })
    const { output, exited } = watchChild(child)
    try {
      expect(await untilReady(port), output()).toBe(true)
      // The postmaster dies (OOM killer, kill -9): its pid is the first line of postmaster.pid.
      const postmaster = Number(readFileSync(join(dataDir, "postgres", "postmaster.pid"), "utf8").split("\n")[0])
      process.kill(postmaster, "SIGKILL")
      while (isAlive(postmaster)) await new Promise((r) => setTimeout(r, 50))
      // A refused connection says what the process printed (it once refused in CI, under load).
      const metrics = await send(port, `api.localhost:${port}`, "/metrics").catch((e: unknown) => {
        throw new Error(
          `${String(e)}; the process (exit ${child.exitCode}, signal ${child.signalCode}) printed:\n${output()}`,
        )
      })
      expect(metrics.status).toBe(200)
      expect(metrics.text).toMatch(/^authservice_metrics_scrape_error\{part="database"\} 1$/m)
      const started = performance.now()
      child.kill("SIGTERM")
      // Before the fix it waited forever for the dead postmaster's exit event; now it takes well under a second.
      const code = await Promise.race([exited, new Promise<"hung">((r) => setTimeout(() => r("hung"), 10_000))])
      expect(code, output()).toBe(0)
      expect(performance.now() - started).toBeLessThan(10_000)
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 120_000)

  it("as root, stops with one line when DATA_DIR sits under a 0700 directory the postgres user cannot reach", async () => {
    if (process.getuid?.() !== 0) {
      // Only root hands Postgres to the `postgres` user; for anyone else the directory is reachable.
      expect(process.getuid?.()).not.toBe(0)
      return
    }
    const home = mkdtempSync(join(tmpdir(), "authservice-home-"))
    chmodSync(home, 0o700)
    const dataDir = join(home, "checkout", ".data")
    mkdirSync(dataDir, { recursive: true })
    const line = oneLine(await runEntry("src/start.ts", [], { PORT: String(await freePort()), DATA_DIR: dataDir }))
    expect(line).toContain("'postgres' user")
    expect(line).toMatch(/chmod o\+x|DATABASE_URL/)
    rmSync(home, { recursive: true, force: true })
  })
})
