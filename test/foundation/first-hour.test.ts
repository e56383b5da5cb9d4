import { type ChildProcess, execFile, spawn } from "node:child_process"
import { createHash, randomBytes } from "node:crypto"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { get } from "node:http"
import { createServer, type Server } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { inject } from "vitest"
import { freePort } from "../../src/platform/free-port.js"
import { type TestApp, startApp } from "../support/app.js"
import { send } from "../support/http.js"
import { type Outcome, runEntry, watchChild } from "../support/processes.js"

// "The first hour" of issue 23, tried as a new user would: real `npm start` processes (node with
// tsx as a loader, as the npm script runs it), killed and started again; real sockets; the CLI
// as a child process. docs/decisions/foundation.md, "The first hour".

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const waitFor = async (what: string, probe: () => boolean | Promise<boolean>, timeoutMs = 60_000) => {
  const deadline = Date.now() + timeoutMs
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

interface Started {
  readonly child: ChildProcess
  readonly output: () => string
  readonly exited: Promise<number | null>
}

/** `npm start` as its script runs it (one node process), until /readyz answers and the banner is out. */
const npmStart = async (env: Record<string, string>): Promise<Started> => {
  const child = spawn(process.execPath, ["--import", "tsx", "src/start.ts"], {
    env: { PATH: process.env["PATH"]!, HOME: process.env["HOME"] ?? "/root", LOG_REQUESTS: "false", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  })
  const { output, exited } = watchChild(child)
  const port = Number(env["PORT"])
  await waitFor(`npm start on ${port}`, async () => {
    const ready = await send(port, `api.localhost:${port}`, "/readyz").then(
      (r) => r.status === 200,
      () => false,
    )
    return ready && output().includes("Health:")
  }).catch((e) => {
    child.kill("SIGKILL")
    throw new Error(`${(e as Error).message}\n${output()}`)
  })
  return { child, output, exited }
}

const getBytes = (port: number, host: string, path: string) =>
  new Promise<{ status: number; type: string | undefined; body: Buffer }>((resolve, reject) => {
    get({ host: "127.0.0.1", port, path, headers: { host } }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, type: res.headers["content-type"], body: Buffer.concat(chunks) }),
      )
    }).on("error", reject)
  })

const postmasterPid = (dataDir: string) =>
  Number(readFileSync(join(dataDir, "postgres", "postmaster.pid"), "utf8").split("\n")[0])

const oneLine = (outcome: Outcome) => {
  expect(outcome.code, outcome.stderr).toBe(1)
  const lines = outcome.stderr.trim().split("\n")
  expect(lines, outcome.stderr).toHaveLength(1)
  expect(lines[0]).toMatch(/^authservice: /)
  expect(outcome.stderr).not.toMatch(/undefined|\n\s+at /)
  return lines[0]!
}

/** A shell command line as the banner prints it, run in the checkout like a person would. */
const shell = (command: string) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      "sh",
      ["-c", command],
      { cwd: process.cwd(), env: { PATH: process.env["PATH"]!, HOME: process.env["HOME"] ?? "/root" } },
      (error, stdout, stderr) =>
        resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
  })

describe("npm start killed, then started again", () => {
  it("the banner's commands carry this run's PORT and DATA_DIR; a killed run's Postgres is stopped by the next start, which keeps the data; a second start on a directory in use is refused naming the process", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "authservice-first-hour-"))
    const first = String(await freePort())
    const started: Array<Started> = []
    try {
      const a = await npmStart({ PORT: first, DATA_DIR: dataDir })
      started.push(a)
      // The printed bootstrap command: this run's variables, its output under DATA_DIR.
      const bootstrapLine = /Bootstrap:\s+(.+)$/m.exec(a.output())![1]!
      expect(bootstrapLine).toBe(
        `PORT=${first} DATA_DIR=${dataDir} npm run -s cli -- bootstrap --json > ${dataDir}/bootstrap.json`,
      )
      expect(a.output()).toContain(
        `Dev mailbox:     http://env-<environment_id>.login.localhost:${first}/login/dev-mailbox`,
      )
      expect(a.output()).toContain(`Home:            http://localhost:${first}/`)
      const ran = await shell(bootstrapLine)
      expect(ran.code, ran.stderr).toBe(0)
      const boot = JSON.parse(readFileSync(join(dataDir, "bootstrap.json"), "utf8"))
      expect(boot.management_url).toBe(`http://api.localhost:${first}`)
      expect(boot.issuer).toBe(`http://localhost:${first}/e/${boot.environment_id}`)

      // kill -9: the postmaster outlives its parent.
      const orphan = postmasterPid(dataDir)
      a.child.kill("SIGKILL")
      await a.exited
      await new Promise((r) => setTimeout(r, 200))
      expect(isAlive(orphan)).toBe(true)

      const second = String(await freePort())
      const b = await npmStart({ PORT: second, DATA_DIR: dataDir })
      started.push(b)
      expect(isAlive(orphan)).toBe(false)
      expect(postmasterPid(dataDir)).not.toBe(orphan)
      expect(b.output()).toContain("stopped the embedded Postgres that an earlier run")
      expect(b.output()).not.toMatch(/undefined/)
      // Same data: the Workspace and key made before the kill still answer.
      const ws = await send(Number(second), `api.localhost:${second}`, `/v1/workspaces/${boot.workspace_id}`, {
        headers: { authorization: `Bearer ${boot.api_key}` },
      })
      expect(ws.status).toBe(200)

      // A second start on the same directory while this one runs: refused, one line, no second postmaster.
      const running = postmasterPid(dataDir)
      const refused = oneLine(
        await runEntry("src/start.ts", [], { PORT: String(await freePort()), DATA_DIR: dataDir }, 90_000),
      )
      expect(refused).toContain(`another authservice process (pid ${b.child.pid})`)
      expect(refused).toContain("set DATA_DIR to another directory")
      expect(postmasterPid(dataDir)).toBe(running)
      expect(isAlive(running)).toBe(true)
      expect((await send(Number(second), `api.localhost:${second}`, "/readyz")).status).toBe(200)

      b.child.kill("SIGTERM")
      expect(await b.exited).toBe(0)
      expect(existsSync(join(dataDir, "postgres", "postmaster.pid"))).toBe(false)
    } finally {
      for (const s of started) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill("SIGKILL")
      try {
        process.kill(postmasterPid(dataDir), "SIGKILL")
      } catch {
        // stopped already
      }
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 240_000)

  it("a postmaster.pid naming a live process that is not Postgres (pid reuse) does not block the start", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "authservice-first-hour-"))
    const port = String(await freePort())
    const sleeper = spawn("sleep", ["120"], { stdio: "ignore" })
    try {
      const a = await npmStart({ PORT: port, DATA_DIR: dataDir })
      a.child.kill("SIGTERM")
      expect(await a.exited).toBe(0)
      // What a reboot leaves: the lock file of a postmaster that is gone, its pid now someone else's.
      writeFileSync(
        join(dataDir, "postgres", "postmaster.pid"),
        `${sleeper.pid}\n${join(dataDir, "postgres")}\n1700000000\n5432\n/tmp\n127.0.0.1\n  5432001    32768\nready\n`,
      )
      const b = await npmStart({ PORT: port, DATA_DIR: dataDir })
      expect(postmasterPid(dataDir)).not.toBe(sleeper.pid)
      expect(isAlive(sleeper.pid!)).toBe(true)
      b.child.kill("SIGTERM")
      expect(await b.exited).toBe(0)
    } finally {
      sleeper.kill("SIGKILL")
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 180_000)
})

describe("start failures: one line, the real cause and the fix", () => {
  const key = randomBytes(32).toString("base64url")
  const serverUrl = () => new URL(inject("serverUrl"))

  it("connection refused", async () => {
    const port = await freePort()
    const line = oneLine(
      await runEntry("src/main.ts", [], {
        DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/auth`,
        MASTER_KEY: key,
        PORT: String(await freePort()),
      }),
    )
    expect(line).toBe(
      `authservice: cannot use the database postgres@127.0.0.1:${port}/auth: connection refused (nothing listens there); start Postgres there, or correct the host and port (DATABASE_URL)`,
    )
  })

  it("a database that does not exist", async () => {
    const url = serverUrl()
    url.pathname = "/no_such_database"
    const line = oneLine(
      await runEntry("src/main.ts", [], { DATABASE_URL: url.href, MASTER_KEY: key, PORT: String(await freePort()) }),
    )
    expect(line).toContain('database "no_such_database" does not exist')
    expect(line).toContain('create it (createdb no_such_database, or CREATE DATABASE "no_such_database")')
    expect(line).not.toMatch(/Failed to connect|server is running/)
  })

  it("a user the server refuses", async () => {
    const url = serverUrl()
    url.username = "no_such_role"
    url.password = "wrong"
    const line = oneLine(
      await runEntry("src/main.ts", [], { DATABASE_URL: url.href, MASTER_KEY: key, PORT: String(await freePort()) }),
    )
    // Password authentication (the embedded server) or an unknown role (a trusting server).
    expect(line).toMatch(/cannot use the database no_such_role@.*: (password authentication failed|.*no_such_role)/)
    expect(line).toMatch(/correct the user/)
    expect(line).not.toContain("wrong")
  })

  it("a MASTER_KEY made with `openssl rand -base64 32` is accepted; a malformed one says how to make one", async () => {
    const line = oneLine(await runEntry("src/main.ts", [], { MASTER_KEY: "not-a-key", PORT: String(await freePort()) }))
    expect(line).toContain("openssl rand -base64 32")
    const standard = randomBytes(32).toString("base64")
    const url = serverUrl()
    url.pathname = "/no_such_database"
    // Past the key: the start fails later, at the database.
    expect(
      oneLine(await runEntry("src/main.ts", [], { DATABASE_URL: url.href, MASTER_KEY: standard, PORT: "1" })),
    ).toContain("does not exist")
  })
})

describe("against a running service", () => {
  let app: TestApp
  let blocker: Server
  beforeAll(async () => {
    app = await startApp()
  })
  afterAll(async () => {
    await app?.close()
    blocker?.close()
  })

  it("a port in use: one line naming the port and how to choose another, exit 1", async () => {
    blocker = createServer()
    const port = await freePort()
    await new Promise<void>((resolve) => blocker.listen(port, "127.0.0.1", resolve))
    const line = oneLine(
      await runEntry("src/main.ts", [], {
        DATABASE_URL: app.databaseUrl,
        MASTER_KEY: Buffer.from(app.config.masterKey!).toString("base64url"),
        PORT: String(port),
      }),
    )
    expect(line).toBe(
      `authservice: port ${port} is already in use (another process listens on it, perhaps an earlier authservice): stop that process, or choose another port, e.g. PORT=${port + 1}`,
    )
  })

  it("/ on the issuer and Management hosts: a page saying what the host is, linking the console, the API reference and the OpenAPI document, under a strict CSP", async () => {
    for (const [host, what] of [
      [`localhost:${app.port}`, "canonical issuer host"],
      [`api.localhost:${app.port}`, "Management host"],
    ] as const) {
      const page = await app.request(host, "/")
      expect(page.status).toBe(200)
      expect(page.headers["content-type"]).toBe("text/html; charset=utf-8")
      expect(page.text).toContain(what)
      for (const link of [
        `http://api.localhost:${app.port}/console/`,
        `http://api.localhost:${app.port}/v1/reference`,
        `http://api.localhost:${app.port}/v1/openapi.json`,
      ])
        expect(page.text).toContain(`href="${link}"`)
      const csp = String(page.headers["content-security-policy"])
      expect(csp).toMatch(/^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/=]+'; /)
      expect(csp).toContain("frame-ancestors 'none'")
      expect(csp).not.toContain("unsafe-inline")
      expect(page.text).not.toContain("<script")
      // The one inline style is exactly the one the CSP admits.
      const style = /<style>([\s\S]*?)<\/style>/.exec(page.text)![1]!
      expect(csp).toContain(`'sha256-${createHash("sha256").update(style).digest("base64")}'`)
      expect(page.headers["cache-control"]).toBe("no-store")
    }
  })

  it("/favicon.ico answers a bundled icon on every host", async () => {
    const b = await app.bootstrap()
    for (const host of [`localhost:${app.port}`, `api.localhost:${app.port}`, b.interaction_domain]) {
      const icon = await getBytes(app.port, host, "/favicon.ico")
      expect([host, icon.status, icon.type]).toEqual([host, 200, "image/x-icon"])
      // An ICO container (reserved 0, type 1, one image) holding a PNG.
      expect(icon.body.subarray(0, 6).toString("hex")).toBe("000001000100")
      expect(icon.body.subarray(22, 26).toString("latin1")).toBe("\x89PNG")
    }
  })
})

describe("operator command line", () => {
  const cli = (args: ReadonlyArray<string>, env: Record<string, string> = {}) => runEntry("src/cli.ts", args, env)
  const COMMANDS = [
    ["bootstrap"],
    ["master-key", "rotate"],
    ["signing-keys", "rotate"],
    ["purge-deleted-users"],
    ["platform-user", "create"],
    ["dashboard-session", "create"],
    ["login"],
  ]

  it("every command's --help exits 0 with its usage and an example, without a database or configuration", async () => {
    // An unusable configuration proves --help reads none.
    const env = { PORT: "not-a-port", DATABASE_URL: "postgres://127.0.0.1:1/none" }
    for (const command of COMMANDS) {
      const out = await cli([...command, "--help"], env)
      expect([command.join(" "), out.code, out.stderr]).toEqual([command.join(" "), 0, ""])
      expect(out.stdout).toContain(`usage: npm run cli -- ${command.join(" ")}`)
      expect(out.stdout).toMatch(new RegExp(`example:\\n  npm run -s cli -- ${command.join(" ")} `))
    }
    const help = await cli(["help", "login"], env)
    expect([help.code, help.stdout]).toEqual([0, expect.stringContaining("usage: npm run cli -- login --issuer")])
    const all = await cli(["--help"], env)
    expect(all.code).toBe(0)
    for (const command of COMMANDS) expect(all.stdout).toContain(`\n  ${command.join(" ")}`)
  }, 240_000)

  it("usage, --help and wrong use are answered without loading Effect or the application; running a command loads them", async () => {
    // Each process reports what it resolves of Effect and of src/runtime.ts (test/support/report-loads.mjs).
    const reporting = { NODE_OPTIONS: `--import=${new URL("../support/report-loads.mjs", import.meta.url).href}` }
    const env = {
      ...reporting,
      DATABASE_URL: "postgres://postgres@127.0.0.1:1/none",
      MASTER_KEY: randomBytes(32).toString("base64url"),
    }
    for (const args of [
      ["--help"],
      ["signing-keys", "rotate", "--help"],
      ["signing-keys", "rotate"],
      ["frobnicate"],
      ["login", "--frob"],
    ]) {
      const out = await cli(args, env)
      expect([args.join(" "), out.stderr]).toEqual([args.join(" "), expect.not.stringContaining("loaded ")])
    }
    const run = await cli(["signing-keys", "rotate", "--environment", `env_${"a".repeat(32)}`], env)
    expect(run.code).toBe(1)
    expect(run.stderr).toContain("loaded /node_modules/effect/\n")
    expect(run.stderr).toContain("loaded /src/runtime.ts\n")
  }, 120_000)

  it("an unknown command exits 2, names it and lists every command", async () => {
    const out = await cli(["frobnicate", "--json"])
    expect(out.code).toBe(2)
    expect(out.stdout).toBe("")
    expect(out.stderr.split("\n")[0]).toBe(
      'authservice cli: unknown command "frobnicate"; the commands are: bootstrap, master-key rotate, signing-keys rotate, purge-deleted-users, platform-user create, dashboard-session create, login',
    )
    const partial = await cli(["master-key"])
    expect([partial.code, partial.stderr.split("\n")[0]]).toEqual([
      2,
      expect.stringContaining('unknown command "master-key"'),
    ])
  })

  it("wrong use exits 2 with the reason, before any database is touched", async () => {
    // A database that refuses: wrong use must be found first.
    const env = {
      DATABASE_URL: "postgres://postgres@127.0.0.1:1/none",
      MASTER_KEY: randomBytes(32).toString("base64url"),
    }
    for (const [args, reason] of [
      [["signing-keys", "rotate"], "--environment is required"],
      [["signing-keys", "rotate", "--environment", "env_x", "--publish-ahead", "soon"], "--publish-ahead must be"],
      [["master-key", "rotate", "--batch-size", "0"], "--batch-size must be at least 1"],
      [["bootstrap", "--frob"], 'unknown argument "--frob"'],
      [["platform-user", "create"], "--email is required"],
      [["dashboard-session", "create", "--email"], "--email needs a value"],
      [["purge-deleted-users", "--older-than", "soon"], "--older-than must be"],
      [
        ["login", "--issuer", "http://localhost:3000/e/env_x"],
        "--issuer (an http(s) URL) and --client-id are required",
      ],
      [["login", "--frob"], 'unknown argument "--frob"'],
    ] as const) {
      const out = await cli(args, env)
      expect([args.join(" "), out.code, out.stdout]).toEqual([args.join(" "), 2, ""])
      const lines = out.stderr.trim().split("\n")
      expect(lines, out.stderr).toHaveLength(1)
      expect(lines[0]).toContain(`authservice cli: ${reason}`)
      expect(lines[0]).toContain("usage: npm run cli -- ")
    }
  }, 240_000)

  it("one spelling per option: --environment everywhere, --environment-id kept as its alias", async () => {
    const env = {
      DATABASE_URL: "postgres://postgres@127.0.0.1:1/none",
      MASTER_KEY: randomBytes(32).toString("base64url"),
    }
    for (const command of [["signing-keys", "rotate"], ["purge-deleted-users"]]) {
      const help = await cli([...command, "--help"])
      expect(help.stdout).toContain("--environment <env_")
      expect(help.stdout).not.toMatch(/usage: .*--environment-id/)
      // Both spellings pass the flag checks and reach the database (which refuses here: exit 1).
      for (const flag of ["--environment", "--environment-id"]) {
        const out = await cli([...command, flag, `env_${"a".repeat(32)}`], env)
        expect([command.join(" "), flag, out.code]).toEqual([command.join(" "), flag, 1])
        expect(out.stderr).toContain("cannot use the database postgres@127.0.0.1:1/none: connection refused")
      }
    }
  }, 240_000)

  it("the login helper says which URL it could not reach and why, instead of `fetch failed`", async () => {
    const port = await freePort()
    const out = await cli(["login", "--issuer", `http://127.0.0.1:${port}/e/env_x`, "--client-id", "c"])
    expect(out.code).toBe(1)
    expect(out.stderr.trim()).toBe(
      `authservice cli: cannot reach the issuer at http://127.0.0.1:${port}/e/env_x/.well-known/openid-configuration: connection refused (is the server running? npm start)`,
    )
  })
})
