import fc from "fast-check"
import { afterAll, beforeAll, expect, it } from "vitest"
import { allRoutes } from "../../src/http/routes.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { uniqueEmail } from "../login/support.js"
import { bodyFor, expectProblem, RUNS, refusedChangesNothing, snapshot } from "./support.js"

let app: TestApp
let b: Bootstrapped
let userId: string

beforeAll(async () => {
  app = await startApp()
  b = await app.bootstrap()
  const user = await app.management("/v1/users", { method: "POST", body: { environment_id: b.environment_id, email: uniqueEmail("fuzz-target") } })
  expect(user.status, user.text).toBe(201)
  userId = user.json.id
})
afterAll(async () => { await app?.close() })

/** A valid create body per collection, which the generator breaks one field at a time. */
const bases = (): Record<string, Record<string, unknown>> => ({
  "/v1/workspaces": { name: "Fuzz" },
  "/v1/projects": { workspace_id: b.workspace_id, name: "Fuzz" },
  "/v1/environments": { project_id: b.project_id, type: "development", name: "Fuzz" },
  "/v1/api-keys": { workspace_id: b.workspace_id, name: "Fuzz", scopes: ["users:read"] },
  "/v1/clients": { environment_id: b.environment_id, client_type: "web_spa", name: "Fuzz", token_endpoint_auth_method: "none", redirect_uris: ["https://app.example.com/cb"] },
  "/v1/connections": { environment_id: b.environment_id, provider: "google", mode: "custom", provider_client_id: "id", provider_client_secret: "secret" },
  "/v1/domains": { environment_id: b.environment_id, hostname: "login.fuzz.example.com" },
  "/v1/users": { environment_id: b.environment_id, email: uniqueEmail("fuzz") },
  "/v1/webhooks": { environment_id: b.environment_id, url: "https://hooks.example.com/in", event_types: ["user.created"] },
  "/v1/user-import-jobs": { environment_id: b.environment_id, format: "csv", source_url: "https://files.example.com/users.csv" },
  "/v1/user-export-jobs": { environment_id: b.environment_id },
  "/v1/impersonation": { user_id: userId, reason: "support ticket" },
})

it("every Management create body (POST on a collection): the spec's success or error, never a 500; a refusal changes nothing", async () => {
  const creates = allRoutes(app.config).management.filter((r) => r.method === "POST" && r.doc?.body !== undefined && !/:[a-zA-Z]+/.test(r.path))
  expect(creates.map((r) => r.path).sort()).toEqual(expect.arrayContaining(["/v1/clients", "/v1/users", "/v1/webhooks", "/v1/environments", "/v1/api-keys"]))
  const baseBodies = bases()
  const seen = new Map<string, Set<number>>()
  for (const route of creates) {
    const fields = Object.keys((route.doc!.body as { fields?: Record<string, unknown> }).fields ?? {})
    await fc.assert(fc.asyncProperty(bodyFor(fields, baseBodies[route.path] ?? {}), async (body) => {
      const before = await snapshot(app)
      const res = await app.management(route.path, { method: "POST", body: JSON.stringify(body) })
      const context = `POST ${route.path} ${JSON.stringify(body).slice(0, 300)}`
      seen.set(route.path, (seen.get(route.path) ?? new Set()).add(res.status))
      if (res.status >= 400) expectProblem(res, context)
      else expect([200, 201, 202], context).toContain(res.status)
      await refusedChangesNothing(app, before, res, context)
    }), { numRuns: RUNS, examples: [[baseBodies[route.path] ?? {}]] })
  }
  for (const route of creates) expect([...seen.get(route.path)!].some((s) => s >= 400), route.path).toBe(true)
  expect(seen.get("/v1/users")!.has(201)).toBe(true)
}, 240_000)

it("found by fuzzing: a NUL anywhere in a JSON body is 400 invalid_request and stores nothing (Postgres cannot hold it)", async () => {
  const cases: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
    ["/v1/projects", { workspace_id: b.workspace_id, name: "a\u0000b" }],
    ["/v1/users", { environment_id: b.environment_id, email: uniqueEmail("nul"), name: "a\u0000b" }],
    ["/v1/users", { environment_id: b.environment_id, email: uniqueEmail("nul"), metadata: { "k\u0000": "v" } }],
    ["/v1/clients", { environment_id: b.environment_id, client_type: "web_spa", name: "a\u0000", token_endpoint_auth_method: "none", redirect_uris: ["https://a.example.com/cb"] }],
  ]
  for (const [path, body] of cases) {
    const before = await snapshot(app)
    const res = await app.management(path, { method: "POST", body })
    expect([res.status, res.json.code, res.json.detail], path).toEqual([400, "invalid_request", "Strings must not contain the NUL character (U+0000)"])
    expect(await snapshot(app)).toEqual(before)
  }
  // A wrong type still wins over the NUL (shape before rule).
  const wrongType = await app.management("/v1/projects", { method: "POST", body: { workspace_id: b.workspace_id, name: 5, slug: "a\u0000" } })
  expect([wrongType.status, wrongType.json.code]).toEqual([400, "invalid_request_body"])
})
