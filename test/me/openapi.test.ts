import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { meRoutes } from "../../src/me/routes.js"
import { type TestApp, startApp } from "../support/app.js"

// The Public API is in the OpenAPI document (src/openapi), generated from the schemas the /me
// routes decode with.

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
const resolve = (schema: any): any =>
  schema?.$ref ? resolve(doc.components.schemas[schema.$ref.split("/").pop()]) : schema
const bodyOf = (o: any) => resolve(o.requestBody.content["application/json"].schema)
const responseOf = (o: any, status: string) => resolve(o.responses[status].content["application/json"].schema)

describe("OpenAPI: /me", () => {
  it("documents every /me route under /v1 with a summary", () => {
    const paths = meRoutes.map((r) => `${r.method} /v1${r.path.replace(/:(\w+)/g, "{$1}")}`)
    for (const route of [
      "GET /v1/me",
      "PATCH /v1/me",
      "DELETE /v1/me",
      "POST /v1/me/email/change/start",
      "POST /v1/me/email/change/verify-old",
      "POST /v1/me/email/change/verify-new",
      "GET /v1/me/identities",
      "DELETE /v1/me/identities/{identityId}",
      "GET /v1/me/sessions",
      "DELETE /v1/me/sessions/{sessionId}",
      "DELETE /v1/me/sessions",
    ]) {
      expect(paths).toContain(route)
      const [method, path] = route.split(" ") as [string, string]
      expect(op(method, path)?.summary, route).toEqual(expect.any(String))
    }
  })

  it("the same schemas as the routes: bodies, 202 challenges, field names", () => {
    expect(Object.keys(bodyOf(op("PATCH", "/v1/me")).properties).sort()).toEqual([
      "avatar_url",
      "locale",
      "name",
      "timezone",
    ])
    expect(Object.keys(responseOf(op("GET", "/v1/me"), "200").properties).sort()).toEqual([
      "avatar_url",
      "created_at",
      "email",
      "email_verified",
      "last_login_at",
      "locale",
      "name",
      "status",
      "timezone",
      "user_id",
    ])
    expect(bodyOf(op("POST", "/v1/me/email/change/start")).required).toEqual(["new_email"])
    for (const step of ["start", "verify-old"]) {
      expect(Object.keys(responseOf(op("POST", `/v1/me/email/change/${step}`), "202").properties).sort()).toEqual([
        "challenge_id",
        "expires_at",
      ])
    }
    expect(Object.keys(responseOf(op("POST", "/v1/me/email/change/verify-new"), "200").properties).sort()).toEqual([
      "email",
      "email_verified",
    ])
    expect(op("POST", "/v1/me/email/change/resend")).toBeUndefined()
    const session = resolve(responseOf(op("GET", "/v1/me/sessions"), "200").properties.data.items)
    expect(Object.keys(session.properties)).toContain("current")
    expect(Object.keys(responseOf(op("DELETE", "/v1/me/identities/{identityId}"), "200").properties).sort()).toEqual([
      "identity_id",
      "unlinked",
    ])
    expect(Object.keys(responseOf(op("DELETE", "/v1/me"), "200").properties).sort()).toEqual(["status", "user_id"])
  })
})
