import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type TestApp, startApp } from "../../support/app.js"
import { normalize } from "../support/spec-routes.js"
import { expectProblem } from "../support/problem.js"

// The jobs, usage and impersonation routes are documented from the schemas they decode with.

let app: TestApp
let doc: { paths: Record<string, Record<string, Record<string, any>>> }
beforeAll(async () => {
  app = await startApp()
  await app.bootstrap()
  doc = (await app.request(app.config.managementHost, "/v1/openapi.json")).json
})
afterAll(async () => {
  await app?.close()
})

const operation = (route: string) => {
  const [method, path] = route.split(" ") as [string, string]
  return Object.entries(doc.paths).find(([p]) => normalize(p) === normalize(path))?.[1][method.toLowerCase()]
}
const params = (route: string) =>
  (operation(route)!.parameters ?? []).map(
    (p: { name: string; in: string; required: boolean }) => `${p.in}:${p.name}:${p.required}`,
  )
const bodyOf = (route: string) => operation(route)!.requestBody.content["application/json"].schema

describe("OpenAPI: jobs, usage, impersonation", () => {
  it("carries each route's scope", () => {
    expect(
      Object.fromEntries(
        [
          "POST /v1/user-import-jobs",
          "GET /v1/user-import-jobs/{id}",
          "GET /v1/user-import-jobs/{id}/errors",
          "POST /v1/user-export-jobs",
          "GET /v1/user-export-jobs/{id}",
          "GET /v1/user-export-jobs/{id}/download",
          "GET /v1/usage/mau",
          "POST /v1/impersonation",
        ].map((r) => [r, operation(r)!["x-required-scope"]]),
      ),
    ).toEqual({
      "POST /v1/user-import-jobs": "user_data_jobs:write",
      "GET /v1/user-import-jobs/{id}": "user_data_jobs:read",
      "GET /v1/user-import-jobs/{id}/errors": "user_data_jobs:read",
      "POST /v1/user-export-jobs": "user_data_jobs:write",
      "GET /v1/user-export-jobs/{id}": "user_data_jobs:read",
      "GET /v1/user-export-jobs/{id}/download": "user_data_jobs:read",
      "GET /v1/usage/mau": "usage:read",
      "POST /v1/impersonation": "impersonation:create",
    })
    expect(operation("POST /v1/impersonation/stop")!.summary).toEqual(expect.any(String))
  })

  it("documents parameters and bodies; Idempotency-Key only where supported", () => {
    expect(params("GET /v1/usage/mau")).toEqual(
      expect.arrayContaining(["query:billing_month:false", "query:environment_id:false"]),
    )
    expect(params("GET /v1/user-import-jobs/{id}/errors")).toEqual(
      expect.arrayContaining(["path:jobId:true", "query:limit:false", "query:cursor:false"]),
    )
    expect(params("POST /v1/impersonation")).toEqual(["query:environment_id:true"])
    expect(params("POST /v1/user-import-jobs")).toContain("header:Idempotency-Key:false")
    expect(params("POST /v1/user-export-jobs")).toContain("header:Idempotency-Key:false")
    expect(operation("POST /v1/impersonation/stop")!.parameters ?? []).toEqual([])
    expect(bodyOf("POST /v1/user-import-jobs").required).toEqual(
      expect.arrayContaining(["environment_id", "format", "source_url"]),
    )
    expect(JSON.stringify(bodyOf("POST /v1/user-import-jobs"))).toContain('"csv"')
    expect(bodyOf("POST /v1/user-export-jobs").required).toEqual(
      expect.arrayContaining(["environment_id", "target_user_id"]),
    )
    expect(bodyOf("POST /v1/impersonation").required).toEqual(
      expect.arrayContaining(["user_id", "reason", "duration_minutes"]),
    )
    expect(operation("POST /v1/user-import-jobs")!.responses["201"]).toBeDefined()
    expect(JSON.stringify(operation("GET /v1/user-export-jobs/{id}")!.responses["200"])).toContain("download_url")
    expect(JSON.stringify(operation("GET /v1/usage/mau")!.responses["200"])).toContain("free_tier_limit")
    expect(JSON.stringify(operation("POST /v1/impersonation")!.responses["201"])).toContain("forbidden_scopes")
  })

  it("billing routes are documented (src/billing) and, without a payment provider, answer 501 billing_not_configured", async () => {
    expect(operation("POST /v1/billing/checkout-session")!["x-required-scope"]).toBe("billing:write")
    expect(operation("POST /v1/billing/portal-session")!["x-required-scope"]).toBe("billing:write")
    expectProblem(
      await app.management("/v1/billing/checkout-session", {
        method: "POST",
        body: { success_url: "https://a.example/s", cancel_url: "https://a.example/c" },
      }),
      501,
      "billing_not_configured",
    )
    expectProblem(
      await app.management("/v1/billing/portal-session", {
        method: "POST",
        body: { return_url: "https://a.example/r" },
      }),
      501,
      "billing_not_configured",
    )
  })
})
