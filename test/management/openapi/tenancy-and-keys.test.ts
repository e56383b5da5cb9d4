import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { managementRoutes } from "../../../src/routes.js"
import { type TestApp, startApp } from "../../support/app.js"
import { CORE_ROUTES, documentedRoutes, normalize } from "../support/spec-routes.js"

let app: TestApp
let doc: {
  paths: Record<string, Record<string, Record<string, any>>>
  components: { schemas: Record<string, unknown> }
}
beforeAll(async () => {
  app = await startApp()
  const res = await app.request(app.config.managementHost, "/v1/openapi.json")
  expect(res.status).toBe(200)
  doc = res.json
})
afterAll(async () => {
  await app?.close()
})

const operation = (route: string) => {
  const [method, path] = route.split(" ") as [string, string]
  const found = Object.entries(doc.paths).find(([p]) => normalize(p) === normalize(path))
  return found?.[1][method.toLowerCase()]
}

describe("GET /v1/openapi.json (Management host)", () => {
  it("documents every route registered in managementRoutes(), each with a summary", () => {
    const documented = documentedRoutes(doc)
    const registered = managementRoutes().filter((r) => r.method !== "OPTIONS")
    const missing = registered
      .filter((r) => !documented.has(normalize(`${r.method} ${r.path}`)))
      .map((r) => `${r.method} ${r.path}`)
    expect(missing).toEqual([])
    for (const r of registered) expect(r.doc?.summary, `${r.method} ${r.path}`).toEqual(expect.any(String))
  })

  it("documents every Workspace, Project, Environment and API key route of the spec", () => {
    const documented = documentedRoutes(doc)
    expect(CORE_ROUTES.filter((r) => !documented.has(normalize(r)))).toEqual([])
  })

  it("each core route carries its scope, parameters and the schemas it decodes with", () => {
    for (const route of CORE_ROUTES) {
      const op = operation(route)!
      expect(op.summary, route).toEqual(expect.any(String))
      if (route !== "POST /v1/workspaces") expect(op["x-required-scope"], route).toMatch(/^[a-z_]+:[a-z_]+$/)
      const pathParams = (route.match(/\{[^}]+\}/g) ?? []).length
      expect(
        (op.parameters ?? []).filter((p: { in: string }) => p.in === "path"),
        route,
      ).toHaveLength(pathParams)
      expect(op.responses, route).toHaveProperty("default")
    }
    expect(operation("GET /v1/api-keys")!["x-required-scope"]).toBe("api_keys:read")
    expect(operation("POST /v1/environments/{id}/rp-migration/disable-legacy")!["x-required-scope"]).toBe(
      "environments:write",
    )
    const listKeys = operation("GET /v1/api-keys")!.parameters.map((p: { name: string; required: boolean }) => [
      p.name,
      p.required,
    ])
    expect(listKeys).toEqual(
      expect.arrayContaining([
        ["workspace_id", true],
        ["environment_id", false],
        ["limit", false],
        ["cursor", false],
      ]),
    )
    const createKey = operation("POST /v1/api-keys")!
    const body = createKey.requestBody.content["application/json"].schema
    expect(body.required).toEqual(expect.arrayContaining(["workspace_id", "name", "scopes"]))
    expect(Object.keys(body.properties)).toEqual(expect.arrayContaining(["environment_id", "expires_at"]))
    expect(createKey.responses["201"]).toBeDefined()
    expect(JSON.stringify(createKey.responses["201"])).toContain("secret")
    expect(JSON.stringify(operation("GET /v1/api-keys")!.responses["200"])).not.toContain('"secret"')
    // Idempotency-Key is documented exactly where it is supported.
    const idem = (route: string) =>
      (operation(route)!.parameters ?? []).some((p: { name: string }) => p.name === "Idempotency-Key")
    expect(idem("POST /v1/projects")).toBe(true)
    expect(idem("DELETE /v1/environments/{id}")).toBe(true)
    expect(idem("PATCH /v1/environments/{id}/settings")).toBe(false)
    expect(idem("PUT /v1/environments/{id}/theme")).toBe(false)
    // The Environment body never offers the derived fields.
    const envBody = operation("POST /v1/environments")!.requestBody.content["application/json"].schema
    expect(Object.keys(envBody.properties).sort()).toEqual(["name", "project_id", "type", "workspace_id"])
  })

  it("the theme documents terms_url and privacy_url (what GET /config answers as legal)", () => {
    const resolve = (schema: { $ref?: string; properties?: Record<string, unknown> }) =>
      schema.$ref
        ? (doc.components.schemas[schema.$ref.split("/").pop()!] as { properties: Record<string, unknown> })
        : schema
    const put = operation("PUT /v1/environments/{id}/theme")!
    const body = resolve(put.requestBody.content["application/json"].schema)
    const answer = resolve(put.responses["200"].content["application/json"].schema)
    for (const schema of [body, answer])
      expect(Object.keys(schema.properties!)).toEqual(expect.arrayContaining(["terms_url", "privacy_url"]))
  })
})
