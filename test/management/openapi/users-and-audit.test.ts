import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { auditEventRoutes } from "../../../src/management/audit-events/http.js"
import { userRoutes } from "../../../src/management/users/http.js"
import { type TestApp, startApp } from "../../support/app.js"

let app: TestApp
let doc: { paths: Record<string, Record<string, any>>; components: { schemas: Record<string, any> } }
beforeAll(async () => {
  app = await startApp()
  doc = (await app.request(app.config.managementHost, "/v1/openapi.json")).json
})
afterAll(async () => {
  await app?.close()
})

const op = (method: string, path: string) => doc.paths[path]?.[method.toLowerCase()]
const params = (o: any) =>
  Object.fromEntries(
    (o.parameters ?? []).map((p: { name: string; in: string; required: boolean }) => [
      p.name,
      `${p.in}${p.required ? "!" : ""}`,
    ]),
  )
const resolve = (schema: any): any => (schema?.$ref ? doc.components.schemas[schema.$ref.split("/").pop()] : schema)

describe("OpenAPI: Users and audit events", () => {
  it("documents every users and audit-events route with its scope and a summary", () => {
    for (const r of [...userRoutes, ...auditEventRoutes]) {
      const path = r.path.replace(/:(\w+)/g, "{$1}")
      const o = op(r.method, path)
      expect(o, `${r.method} ${path}`).toBeDefined()
      expect(o.summary).toEqual(expect.any(String))
      expect(o["x-required-scope"], `${r.method} ${path}`).toBe(r.doc?.scope)
      expect(params(o)["environment_id"], `${r.method} ${path}`).toMatch(/^query/)
    }
  })

  it("documents the spec's scopes, query parameters, Idempotency-Key and the decoded body schemas", () => {
    expect(op("GET", "/v1/users")["x-required-scope"]).toBe("users:read")
    expect(op("DELETE", "/v1/users/{userId}")["x-required-scope"]).toBe("users:delete")
    expect(op("POST", "/v1/users/{userId}/block")["x-required-scope"]).toBe("users:block")
    expect(op("DELETE", "/v1/users/{userId}/sessions")["x-required-scope"]).toBe("user_sessions:write")
    expect(op("GET", "/v1/audit-events")["x-required-scope"]).toBe("audit_events:read")
    expect(params(op("GET", "/v1/users"))).toMatchObject({
      environment_id: "query!",
      status: "query",
      search: "query",
      limit: "query",
      cursor: "query",
    })
    expect(params(op("GET", "/v1/audit-events"))).toMatchObject({
      environment_id: "query!",
      actor_type: "query",
      action: "query",
      subject_type: "query",
      subject_id: "query",
      result: "query",
      created_after: "query",
      created_before: "query",
      limit: "query",
      cursor: "query",
    })
    expect(params(op("PATCH", "/v1/users/{userId}"))).toMatchObject({ userId: "path!", "Idempotency-Key": "header" })
    expect(params(op("GET", "/v1/users/{userId}"))["Idempotency-Key"]).toBeUndefined()
    const create = resolve(op("POST", "/v1/users").requestBody.content["application/json"].schema)
    expect(create.required).toEqual(["email"])
    expect(Object.keys(create.properties).sort()).toEqual([
      "avatar_url",
      "email",
      "email_verified",
      "environment_id",
      "locale",
      "metadata",
      "name",
      "timezone",
    ])
    const patch = resolve(op("PATCH", "/v1/users/{userId}").requestBody.content["application/json"].schema)
    expect(Object.keys(patch.properties)).not.toContain("email")
    expect(op("POST", "/v1/users").responses["201"]).toBeDefined()
    const passkeys = JSON.stringify(op("GET", "/v1/users/{userId}/passkeys").responses)
    expect(passkeys).not.toMatch(/credential|public_key|sign_count/)
  })
})
