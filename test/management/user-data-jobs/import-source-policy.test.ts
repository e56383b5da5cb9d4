import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fetchSource, type FetchOptions } from "../../../src/management/user-data-jobs/fetch-source.js"
import type { Resolver } from "../../../src/platform/outbound/guarded-lookup.js"
import { type Bootstrapped, type TestApp, startApp } from "../../support/app.js"
import { startFileServer } from "./file-server.js"
import { query } from "../support/db.js"
import { expectProblem } from "../support/problem.js"

// The import source is fetched under the webhook SSRF rules (docs/architecture.md, Security model): HTTPS,
// no userinfo/fragment, no localhost, no blocked IP literal (400 at POST, nothing created);
// at connect time a name resolving to a blocked address is refused (DNS rebinding); no
// redirects; size and time bounded. This app runs WITHOUT WEBHOOK_ALLOW_PRIVATE_TARGETS.

let app: TestApp
let b: Bootstrapped
let files: Awaited<ReturnType<typeof startFileServer>>
beforeAll(async () => {
  app = await startApp()
  b = await app.bootstrap()
  files = await startFileServer()
})
afterAll(async () => {
  await files?.close()
  await app?.close()
})

describe("POST /user-import-jobs with the production URL rules", () => {
  const refused: Array<[string, string]> = [
    ["http", "http://files.example.com/users.json"],
    ["localhost", "https://localhost/users.json"],
    ["*.localhost", "https://files.localhost/users.json"],
    ["loopback literal", "https://127.0.0.1/users.json"],
    ["hex loopback", "https://0x7f.1/users.json"],
    ["decimal loopback", "https://2130706433/users.json"],
    ["private", "https://10.1.2.3/users.json"],
    ["metadata address", "https://169.254.169.254/latest/meta-data"],
    ["IPv6 loopback", "https://[::1]/users.json"],
    ["IPv4-mapped private", "https://[::ffff:192.168.0.1]/users.json"],
  ]
  for (const [name, url] of refused) {
    it(`refuses ${name} with 400 invalid_request and creates no job`, async () => {
      const res = await app.management("/v1/user-import-jobs", {
        method: "POST",
        body: { environment_id: b.environment_id, format: "json", source_url: url },
      })
      expectProblem(res, 400, "invalid_request")
      expect(res.json.detail).toMatch(/^source_url /)
      expect(
        await query(app, "select id from user_import_jobs where environment_id = $1", [b.environment_id]),
      ).toHaveLength(0)
    })
  }

  it("a local file server is not reachable, even on its real port", async () => {
    const url = files.serve("/secret.json", { body: "[]" }).replace("http://", "https://")
    expectProblem(
      await app.management("/v1/user-import-jobs", {
        method: "POST",
        body: { environment_id: b.environment_id, format: "json", source_url: url },
      }),
      400,
      "invalid_request",
    )
    expect(files.hits).toEqual([])
  })

  it("a name that does not resolve: the job is created and failed (source_unreachable)", async () => {
    const res = await app.management("/v1/user-import-jobs", {
      method: "POST",
      body: {
        environment_id: b.environment_id,
        format: "csv",
        source_url: "https://does-not-resolve.invalid/users.csv?token=s3cr3t",
      },
    })
    expect(res.status).toBe(201)
    expect(res.json).toMatchObject({
      status: "failed",
      error: { code: "source_unreachable" },
      source_url: "https://does-not-resolve.invalid/users.csv",
    })
    // The query string (often a credential) is stored nowhere.
    const stored = await query(app, "select source_url from user_import_jobs where id = $1", [res.json.id])
    expect(JSON.stringify(stored)).not.toContain("s3cr3t")
    const audits = await query(app, "select details from audit_events where subject_id = $1", [res.json.id])
    expect(JSON.stringify(audits)).not.toContain("s3cr3t")
  })
})

describe("fetchSource (connect-time guard, bounds)", () => {
  const resolverFor =
    (answers: Record<string, ReadonlyArray<string>>): Resolver =>
    (hostname, callback) => {
      const list = answers[hostname]
      if (!list) return callback(Object.assign(new Error("not found"), { code: "ENOTFOUND" }), [])
      callback(
        null,
        list.map((address) => ({ address, family: address.includes(":") ? 6 : 4 })),
      )
    }
  const fetch = (url: string, options: Partial<FetchOptions> = {}) =>
    Effect.runPromise(fetchSource(url, { allowPrivateTargets: false, maxBytes: 1024, timeoutMs: 2_000, ...options }))

  it("refuses a name that resolves to loopback (DNS rebinding) before connecting", async () => {
    const url = `https://rebind.example:${files.port}/x.json`
    expect(await fetch(url, { resolver: resolverFor({ "rebind.example": ["127.0.0.1"] }) })).toMatchObject({
      ok: false,
      code: "source_blocked",
    })
    expect(
      await fetch(url, { resolver: resolverFor({ "rebind.example": ["93.184.216.34", "10.0.0.1"] }) }),
    ).toMatchObject({ ok: false, code: "source_blocked" })
    expect(await fetch(url, { resolver: resolverFor({ "rebind.example": ["::1"] }) })).toMatchObject({
      ok: false,
      code: "source_blocked",
    })
    expect(files.hits).toEqual([])
  })

  it("refuses blocked literals and http without the development flag", async () => {
    expect(await fetch(`https://127.0.0.1:${files.port}/x.json`)).toMatchObject({ ok: false, code: "source_blocked" })
    expect(await fetch("http://files.example.com/x.json")).toMatchObject({ ok: false, code: "source_blocked" })
  })

  it("reads a 2xx body; bounds size; times out; never follows a redirect", async () => {
    const ok = files.serve("/small.json", { body: "[1,2,3]" })
    const big = files.serve("/big.json", { body: Buffer.alloc(2048, 32) })
    const slow = files.serve("/slow.json", { silent: true })
    const moved = files.serve("/moved.json", { status: 301, headers: { location: "/small.json" } })
    const dev = { allowPrivateTargets: true }
    const got = await fetch(ok, dev)
    expect(got.ok && got.body.toString()).toBe("[1,2,3]")
    expect(await fetch(big, dev)).toMatchObject({ ok: false, code: "source_too_large" })
    const started = Date.now()
    expect(await fetch(slow, { ...dev, timeoutMs: 300 })).toMatchObject({ ok: false, code: "source_timeout" })
    expect(Date.now() - started).toBeLessThan(2_000)
    const hitsBefore = files.hits.filter((h) => h === "/small.json").length
    expect(await fetch(moved, dev)).toMatchObject({
      ok: false,
      code: "source_http_error",
      message: expect.stringContaining("301"),
    })
    expect(files.hits.filter((h) => h === "/small.json").length).toBe(hitsBefore)
  })
})
