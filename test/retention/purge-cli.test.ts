import { spawn } from "node:child_process"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { createUser, queryRows } from "../oidc/support.js"
import { parsePurgeArgs } from "../../src/operator/purge-args.js"

// `npm run cli -- purge-deleted-users`, run end to end as a child process (like the CLI
// bootstrap test in test/foundation/processes.test.ts) against this file's database.

const TSX = join(process.cwd(), "node_modules/.bin/tsx")

interface Outcome {
  code: number | null
  stdout: string
  stderr: string
}
const cli = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  new Promise<Outcome>((resolve, reject) => {
    const child = spawn(TSX, ["src/cli.ts", ...args], {
      env: { PATH: process.env["PATH"]!, HOME: process.env["HOME"] ?? "/root", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (c: Buffer) => {
      stdout += c
    })
    child.stderr.on("data", (c: Buffer) => {
      stderr += c
    })
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`timeout: ${stdout} ${stderr}`))
    }, 60_000)
    child.on("exit", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })

let app: TestApp
let env: Bootstrapped
let other: Bootstrapped
let processEnv: Record<string, string>

beforeAll(async () => {
  app = await startApp()
  env = await app.bootstrap()
  other = await app.bootstrap()
  processEnv = { DATABASE_URL: app.databaseUrl, MASTER_KEY: Buffer.from(app.config.masterKey!).toString("base64url") }
})
afterAll(async () => {
  await app?.close()
})

const deletedUser = async (b: Bootstrapped) => {
  const user = await createUser(app, b)
  expect(
    (
      await app.management(`/v1/users/${user.id}?environment_id=${b.environment_id}`, {
        method: "DELETE",
        key: b.api_key,
      })
    ).status,
  ).toBe(200)
  return user
}
const exists = async (id: string) => (await queryRows(app, "select 1 from users where id = $1", [id])).length === 1

describe("npm run cli -- purge-deleted-users", () => {
  it("--help prints the usage and exits 0, touching nothing", async () => {
    const out = await cli(["purge-deleted-users", "--help"], {})
    expect(out.code).toBe(0)
    expect(out.stdout).toContain("usage: npm run cli -- purge-deleted-users")
    expect(out.stdout).toContain("--older-than")
    const top = await cli(["--help"], {})
    expect(top.code).toBe(0)
    expect(top.stdout).toContain("purge-deleted-users")
  }, 120_000)

  it("option rules (parsed before anything touches the database)", () => {
    expect(parsePurgeArgs([])).toEqual({ environmentId: undefined, olderThanMs: 0, dryRun: false })
    expect(parsePurgeArgs(["--older-than", "30d", "--dry-run", `--environment-id=env_${"a".repeat(32)}`])).toEqual({
      environmentId: `env_${"a".repeat(32)}`,
      olderThanMs: 30 * 86_400_000,
      dryRun: true,
    })
    expect(parsePurgeArgs(["--older-than=2h"]).olderThanMs).toBe(7_200_000)
    expect(parsePurgeArgs(["--older-than", "15m"]).olderThanMs).toBe(900_000)
    for (const args of [
      ["--older-than", "30"],
      ["--older-than", "-1d"],
      ["--older-than"],
      ["--environment-id", "prod"],
      ["--frobnicate"],
      ["--dry-run=yes"],
    ]) {
      expect(() => parsePurgeArgs(args), args.join(" ")).toThrow(/usage: npm run cli -- purge-deleted-users/)
    }
  })

  it("refuses a bad option (exit 2, one message, before touching the database) and an unknown Environment", async () => {
    const out = await cli(["purge-deleted-users", "--older-than", "30"], {
      DATABASE_URL: "postgres://postgres@127.0.0.1:1/nowhere",
      MASTER_KEY: processEnv["MASTER_KEY"]!,
    })
    expect(out.code).toBe(2)
    expect(out.stderr).toMatch(/^authservice cli: --older-than must be/)
    expect(out.stdout).toBe("")
    const unknownEnv = await cli(["purge-deleted-users", "--environment-id", `env_${"a".repeat(32)}`], processEnv)
    expect(unknownEnv.code).toBe(1)
    expect(unknownEnv.stderr).toContain("no Environment")
  }, 120_000)

  it("--dry-run lists, --older-than filters, --environment-id narrows; without them every pending user is purged now", async () => {
    const mine = await deletedUser(env)
    const theirs = await deletedUser(other)

    const dry = await cli(["purge-deleted-users", "--environment-id", env.environment_id, "--dry-run"], processEnv)
    expect(dry.code, dry.stderr).toBe(0)
    const dryReport = JSON.parse(dry.stdout)
    expect(dryReport).toMatchObject({
      purged: 0,
      user_ids: [mine.id],
      environment_id: env.environment_id,
      dry_run: true,
    })
    expect(await exists(mine.id)).toBe(true)

    const tooYoung = JSON.parse((await cli(["purge-deleted-users", "--older-than", "1d"], processEnv)).stdout)
    expect(tooYoung).toMatchObject({ purged: 0, user_ids: [], dry_run: false })
    expect(await exists(mine.id)).toBe(true)

    const narrowed = await cli(["purge-deleted-users", `--environment-id=${env.environment_id}`], processEnv)
    expect(narrowed.code, narrowed.stderr).toBe(0)
    expect(narrowed.stdout.trim().split("\n")).toHaveLength(1)
    expect(JSON.parse(narrowed.stdout)).toMatchObject({ purged: 1, user_ids: [mine.id], failed_user_ids: [] })
    expect(await exists(mine.id)).toBe(false)
    expect(await exists(theirs.id)).toBe(true)

    const all = JSON.parse((await cli(["purge-deleted-users"], processEnv)).stdout)
    expect(all).toMatchObject({ purged: 1, user_ids: [theirs.id], environment_id: null })
    expect(await exists(theirs.id)).toBe(false)
  }, 180_000)
})
