import { describe, expect, it } from "vitest"
import { openApiDocument } from "../../src/openapi/document.js"
import { managementRoutes } from "../../src/routes.js"

// A Management route is declared once (src/management/conventions/endpoint.ts): the OpenAPI document
// is generated from the very declarations the routes enforce, If-Match and Idempotency-Key included.

const document = openApiDocument([
  { name: "Management", server: "https://manage.example.test", routes: managementRoutes() },
])
const header = (method: string, path: string, name: string) => {
  const operation = (
    document.paths[path] as Record<string, { parameters?: Array<{ name: string; in: string; required: boolean }> }>
  )[method]
  expect(operation, `${method} ${path}`).toBeDefined()
  return operation!.parameters?.find((p) => p.in === "header" && p.name === name)
}

describe("endpoint declarations in the OpenAPI document", () => {
  it("lists If-Match, optional, on the single-resource updates and deletes that honour it", () => {
    for (const [method, path] of [
      ["patch", "/v1/workspaces/{workspaceId}"],
      ["patch", "/v1/projects/{projectId}"],
      ["delete", "/v1/projects/{projectId}"],
      ["patch", "/v1/environments/{environmentId}"],
      ["delete", "/v1/environments/{environmentId}"],
      ["patch", "/v1/clients/{clientId}"],
      ["delete", "/v1/clients/{clientId}"],
      ["post", "/v1/clients/{clientId}/rotate-secret"],
      ["patch", "/v1/connections/{connectionId}"],
      ["delete", "/v1/connections/{connectionId}"],
      ["patch", "/v1/domains/{domainId}"],
      ["delete", "/v1/domains/{domainId}"],
      ["post", "/v1/domains/{domainId}/retry-validation"],
      ["patch", "/v1/users/{userId}"],
      ["delete", "/v1/users/{userId}"],
      ["patch", "/v1/webhooks/{webhookId}"],
      ["delete", "/v1/webhooks/{webhookId}"],
      ["post", "/v1/webhooks/{webhookId}/rotate-secret"],
    ] as const) {
      expect(header(method, path, "If-Match"), `${method} ${path}`).toMatchObject({
        required: false,
        schema: { type: "string" },
      })
    }
  })

  it("lists If-Match as required on the theme PUT (428 without)", () => {
    expect(header("put", "/v1/environments/{environmentId}/theme", "If-Match")).toMatchObject({ required: true })
    expect(header("put", "/v1/environments/{environmentId}/theme", "Idempotency-Key")).toBeUndefined()
  })

  it("lists no If-Match where none is honoured", () => {
    expect(header("get", "/v1/workspaces/{workspaceId}", "If-Match")).toBeUndefined()
    expect(header("post", "/v1/projects", "If-Match")).toBeUndefined()
    expect(header("patch", "/v1/environments/{environmentId}/settings", "If-Match")).toBeUndefined()
    expect(header("post", "/v1/webhooks/{webhookId}/test", "If-Match")).toBeUndefined()
  })

  it("lists Idempotency-Key from the same declaration that wraps the write", () => {
    expect(header("patch", "/v1/workspaces/{workspaceId}", "Idempotency-Key")).toMatchObject({ required: false })
    expect(header("post", "/v1/workspaces", "Idempotency-Key")).toMatchObject({ required: false })
    expect(header("patch", "/v1/environments/{environmentId}/settings", "Idempotency-Key")).toBeUndefined()
    // The billing sessions mark only the session as idempotent; the header is still documented.
    expect(header("post", "/v1/billing/checkout-session", "Idempotency-Key")).toMatchObject({ required: false })
    expect(header("post", "/v1/billing/stripe/webhook", "Idempotency-Key")).toBeUndefined()
  })
})
