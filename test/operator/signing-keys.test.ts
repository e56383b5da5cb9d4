import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { runCliJson, runEntry } from "../support/processes.js"
import {
  createClient,
  createUser,
  exchangeCode,
  headerOf,
  jwksOf,
  mintCode,
  type TestClient,
  verifyJwt,
} from "../oidc/support.js"
import { sqlRows } from "../webhooks/support.js"

let app: TestApp
let b: Bootstrapped
let client: TestClient
beforeAll(async () => {
  app = await startApp()
  b = await app.bootstrap()
  client = await createClient(app, b, { type: "web_bff" })
})
afterAll(async () => {
  await app?.close()
})

const cliEnv = () => ({
  DATABASE_URL: app.databaseUrl,
  MASTER_KEY: Buffer.from(app.config.masterKey!).toString("base64url"),
  PORT: String(app.port),
})
const rotate = (extra: ReadonlyArray<string> = [], environment = b.environment_id) =>
  runCliJson(["signing-keys", "rotate", "--environment", environment, ...extra], cliEnv())

const idToken = async () => {
  const user = await createUser(app, b)
  const res = await exchangeCode(app, b, client, await mintCode(app, b, client, user))
  expect(res.status, res.text).toBe(200)
  return res.json.id_token as string
}
const kids = async () => (await jwksOf(app, b)).keys.map((k) => k.kid).sort()
const keyRows = () =>
  sqlRows<{ kid: string; status: string }>(
    app,
    "select kid, status from signing_keys where environment_id = $1 order by kid",
    [b.environment_id],
  )
/** Past the server's 10-second key and JWKS caches. */
const pastCaches = () => app.advance("11 seconds")

describe("cli signing-keys rotate: the next key is published before it signs", () => {
  it("--help", async () => {
    const out = await runEntry("src/cli.ts", ["signing-keys", "rotate", "--help"], {})
    expect(out.code).toBe(0)
    expect(out.stdout).toContain("usage: npm run cli -- signing-keys rotate --environment <env_id>")
  })

  it("stage (one winner of two concurrent runs), wait, promote; tokens signed before stay verifiable until they expire", async () => {
    const [active] = (await keyRows()).map((r) => r.kid)
    const before = await idToken()
    expect(headerOf(before).kid).toBe(active)

    // Two operators at once: one stages, the other finds the staged key waiting.
    const runs = await Promise.all([rotate(), rotate()])
    expect(runs.map((r) => r.code)).toEqual([0, 0])
    const staged = runs.find((r) => r.json!["action"] === "staged")!.json!
    const waiting = runs.find((r) => r.json!["action"] === "waiting")!.json!
    expect(staged).toEqual({
      environment_id: b.environment_id,
      action: "staged",
      active_kid: active,
      next_kid: expect.any(String),
      promotable_at: expect.any(String),
    })
    expect(waiting).toEqual({ ...staged, action: "waiting" })
    const next = staged["next_kid"] as string
    expect(Date.parse(staged["promotable_at"]) - Date.now()).toBeGreaterThan(3500_000) // default publish-ahead: one hour
    await pastCaches()
    // Published before use: in the JWKS, not signing.
    expect(await kids()).toEqual([active, next].sort())
    expect(headerOf(await idToken()).kid).toBe(active)

    // Before the publish-ahead period: nothing changes.
    const early = await rotate()
    expect([early.code, early.json!["action"], early.json!["next_kid"]]).toEqual([0, "waiting", next])
    expect(await keyRows()).toEqual(
      [
        { kid: active!, status: "active" },
        { kid: next, status: "next" },
      ].sort((x, y) => (x.kid < y.kid ? -1 : 1)),
    )

    // Once it has been published long enough (here: no wait asked), it signs; the old key stays published.
    const promoted = await rotate(["--publish-ahead", "0"])
    expect([promoted.code, promoted.json]).toEqual([
      0,
      { environment_id: b.environment_id, action: "rotated", active_kid: next, next_kid: null, promotable_at: null },
    ])
    await pastCaches()
    const after = await idToken()
    expect(headerOf(after).kid).toBe(next)
    expect(await kids()).toEqual([active, next].sort())
    await verifyJwt(app, b, before, "JWT")
    await verifyJwt(app, b, after, "JWT")
    // Once the old key's tokens have expired it leaves the JWKS.
    await app.advance("7 minutes")
    expect(await kids()).toEqual([next])
  }, 120_000)

  it("an unknown Environment is refused with one line; bad flags are refused with usage", async () => {
    const unknown = await runEntry(
      "src/cli.ts",
      ["signing-keys", "rotate", "--environment", "env_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"],
      cliEnv(),
    )
    expect([unknown.code, unknown.stderr.trim()]).toEqual([
      1,
      "authservice cli: No Environment env_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    ])
    const missing = await runEntry("src/cli.ts", ["signing-keys", "rotate"], cliEnv())
    expect([missing.code, missing.stderr.trim()]).toEqual([
      2,
      "authservice cli: --environment is required; usage: npm run cli -- signing-keys rotate --environment <env_id> [--publish-ahead <seconds>] [--json] (npm run cli -- signing-keys rotate --help for more)",
    ])
    const bad = await runEntry(
      "src/cli.ts",
      ["signing-keys", "rotate", "--environment", b.environment_id, "--frob"],
      cliEnv(),
    )
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('unknown argument "--frob"')
  }, 60_000)
})
