import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { MAX_FIELD_ERRORS } from "../../../src/http/field-errors.js"
import { type Bootstrapped, startApp, type TestApp } from "../../support/app.js"
import { expectProblem } from "../support/problem.js"

// Every invalid field of a JSON body, as the `errors` extension member of the Problem Details
// (docs/decisions/management-api.md, "Every invalid field"): a JSON Pointer into the body and
// the rule, bounded; `type/title/status/code/detail` stay what they were.

let app: TestApp
let b: Bootstrapped
beforeAll(async () => {
  app = await startApp()
  b = await app.bootstrap()
})
afterAll(async () => {
  await app?.close()
})

const clientCount = async () => {
  const res = await app.management(`/v1/clients?environment_id=${b.environment_id}`)
  return (res.json.data as Array<unknown>).length
}

describe("errors: every invalid field of a Management body", () => {
  it("a body with several broken rules lists each with its pointer; the detail names the first, as before", async () => {
    const before = await clientCount()
    const res = await app.management("/v1/clients", {
      method: "POST",
      body: {
        environment_id: b.environment_id,
        client_type: "web_bff",
        name: "",
        token_endpoint_auth_method: "client_secret_basic",
        redirect_uris: Array.from({ length: 51 }, (_, i) => `https://app.example.com/${i}`),
        mobile_app: { ios_team_id: "lowercase", app_scheme: "Not A Scheme" },
      },
    })
    expectProblem(res, 400, "invalid_request")
    expect(res.json).toMatchObject({
      type: "https://authservice.dev/problems/invalid_request",
      title: "Invalid request",
      status: 400,
      detail: expect.stringContaining("length of at least 1"),
    })
    const pointers = (res.json.errors as Array<{ pointer: string; detail: string }>).map((e) => e.pointer)
    expect(pointers).toEqual(["/name", "/redirect_uris", "/mobile_app/app_scheme", "/mobile_app/ios_team_id"])
    for (const e of res.json.errors) expect(e.detail).toMatch(/^Expected /)
    expect(await clientCount()).toBe(before)
  })

  it("wrong types, unknown and missing fields are invalid_request_body and listed next to broken rules", async () => {
    const res = await app.management("/v1/clients", {
      method: "POST",
      body: {
        environment_id: b.environment_id,
        client_type: "desktop",
        name: "",
        redirect_uris: ["https://ok.example.com/cb", 7],
        colour: "blue",
      },
    })
    expectProblem(res, 400, "invalid_request_body")
    const errors = res.json.errors as Array<{ pointer: string; detail: string }>
    expect(Object.fromEntries(errors.map((e) => [e.pointer, e.detail]))).toMatchObject({
      "/colour": expect.stringContaining("excess property"),
      "/client_type": 'Expected "web_bff" | "web_spa" | "react_native"',
      "/name": expect.stringContaining("length of at least 1"),
      "/token_endpoint_auth_method": expect.stringContaining("Missing key"),
      "/redirect_uris/1": "Expected string",
    })
    // the detail is still the first wrong shape, in prose, as the spec's tests read it
    expect(typeof res.json.detail).toBe("string")
  })

  it("member names with / and ~ are escaped as RFC 6901 says; unstorable strings are listed with their place", async () => {
    const slash = await app.management("/v1/clients", {
      method: "POST",
      body: {
        environment_id: b.environment_id,
        client_type: "web_bff",
        name: "x",
        token_endpoint_auth_method: "none",
        "a/b~c": 1,
      },
    })
    expectProblem(slash, 400, "invalid_request_body")
    expect(slash.json.errors).toEqual([{ pointer: "/a~1b~0c", detail: expect.any(String) }])
    const nul = await app.management("/v1/clients", {
      method: "POST",
      body: `{"environment_id":"${b.environment_id}","client_type":"web_bff","name":"x","token_endpoint_auth_method":"none","redirect_uris":["https://a.example.com/\\u0000"]}`,
      headers: { "content-type": "application/json" },
    })
    expectProblem(nul, 400, "invalid_request")
    expect(nul.json.detail).toBe("Strings must not contain the NUL character (U+0000)")
    expect(nul.json.errors).toEqual([
      { pointer: "/redirect_uris/0", detail: "Strings must not contain the NUL character (U+0000)" },
    ])
  })

  it(`a 1 MiB body of bad values answers at most ${MAX_FIELD_ERRORS} entries and a small answer`, async () => {
    const bad = Array.from({ length: 100_000 }, () => 1)
    const body = JSON.stringify({
      environment_id: b.environment_id,
      client_type: "web_bff",
      name: "x",
      token_endpoint_auth_method: "none",
      allowed_scopes: bad,
    })
    expect(body.length).toBeLessThan(1024 * 1024)
    const res = await app.management("/v1/clients", {
      method: "POST",
      body,
      headers: { "content-type": "application/json" },
    })
    expectProblem(res, 400, "invalid_request_body")
    expect(res.json.errors).toHaveLength(MAX_FIELD_ERRORS)
    expect(res.json.errors[0]).toEqual({ pointer: "/allowed_scopes/0", detail: expect.stringContaining("openid") })
    expect(res.text.length).toBeLessThan(4096)
  })

  it("a read-only field is listed at its pointer", async () => {
    const res = await app.management("/v1/environments", {
      method: "POST",
      body: { project_id: b.project_id, name: "ro", issuer: "https://elsewhere.example.com" },
    })
    expectProblem(res, 400, "invalid_request")
    expect(res.json.detail).toBe("issuer is derived and read-only")
    expect(res.json.errors).toEqual([{ pointer: "/issuer", detail: "issuer is derived and read-only" }])
  })

  it("the Public API decodes through the same decoder: a login transaction body lists each wrong field", async () => {
    const res = await app.issuer(b.environment_id, "/v1/auth/transactions", {
      method: "POST",
      body: { client_id: 7, redirect_uri: "https://app.example.com/cb", state: ["s"], scope: "openid", resource: [1] },
    })
    expectProblem(res, 400, "invalid_request_body")
    expect((res.json.errors as Array<{ pointer: string }>).map((e) => e.pointer).sort()).toEqual([
      "/client_id",
      "/code_challenge",
      "/code_challenge_method",
      "/resource/0",
      "/state",
    ])
  })

  it("the OpenAPI Problem schema documents the member", async () => {
    const doc = await app.request(app.config.managementHost, "/v1/openapi.json")
    expect(doc.json.components.schemas.Problem.properties.errors).toMatchObject({
      type: "array",
      maxItems: MAX_FIELD_ERRORS,
      items: { required: ["pointer", "detail"] },
    })
  })
})
