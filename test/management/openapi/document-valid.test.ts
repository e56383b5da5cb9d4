import { Validator } from "@seriousme/openapi-schema-validator"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Route } from "../../../src/http/route.js"
import { allRoutes, publicApiRoutes } from "../../../src/routes.js"
import { startApp, type TestApp } from "../../support/app.js"

// GET /v1/openapi.json is a valid OpenAPI 3.1 document (checked by a maintained validator,
// @seriousme/openapi-schema-validator, against the OpenAPI Initiative's JSON Schema), and it
// lists exactly the routes the route table (src/routes.ts) registers on the Management and
// Public API surfaces, method and path, both ways. (docs/decisions/management-api.md)

let app: TestApp
let doc: {
  openapi: string
  paths: Record<string, Record<string, { operationId: string; responses: Record<string, unknown> }>>
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

const METHODS = new Set(["get", "put", "post", "delete", "patch", "head", "options", "trace"])

/**
 * Routes of the Management host that are deliberately not in the document, by path prefix, each
 * with its reason. CORS preflights (OPTIONS) are answered for every Public route and are not
 * operations. The issuer's OIDC endpoints and Hosted Login are other surfaces (discovery
 * documents them), not in these lists at all.
 */
const EXCLUDED: ReadonlyArray<readonly [prefix: string, reason: string]> = [
  ["/v1/openapi.json", "the document itself"],
  ["/v1/reference", "the page rendering the document, and its script and Swagger UI files"],
  ["/console", "the admin console's page, files and its own backend (sign-in, session, members), not an API"],
  ["/", "the host's front page for people (src/console/home/page.ts), not an API; this one path only"],
  ["/favicon.ico", "the icon browsers ask every host for"],
]
const matches = (prefix: string, route: string) => {
  const path = route.split(" ")[1]!
  return prefix === "/" ? path === "/" : path.startsWith(prefix)
}
const excluded = (route: string) => EXCLUDED.some(([prefix]) => matches(prefix, route))

const key = (method: string, path: string) => `${method.toUpperCase()} ${path.replace(/:(\w+)/g, "{$1}")}`

/** Every route of the Management host (as the server registers it) and of the Public API. */
const registered = (): Set<string> => {
  const routes: Array<Route> = [
    ...allRoutes(app.config).management,
    ...publicApiRoutes().map((r) => ({ ...r, path: `/v1${r.path}` as const })),
  ]
  return new Set(routes.filter((r) => r.method !== "OPTIONS").map((r) => key(r.method, r.path)))
}

const documented = (): Set<string> => {
  const found = new Set<string>()
  for (const [path, item] of Object.entries(doc.paths))
    for (const method of Object.keys(item)) if (METHODS.has(method)) found.add(key(method, path))
  return found
}

describe("GET /v1/openapi.json", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    const validator = new Validator()
    const result = await validator.validate(structuredClone(doc))
    expect(result.errors ?? []).toEqual([])
    expect(result.valid).toBe(true)
    expect(validator.version).toBe("3.1")
    // the validator does refuse a broken document: a response without its description
    const broken = structuredClone(doc)
    const [first] = Object.values(broken.paths)
    delete (Object.values(first!)[0]!.responses["default"] as { description?: string }).description
    expect((await new Validator().validate(broken)).valid).toBe(false)
  })

  it("operation ids are unique and every operation has a response", () => {
    const ids = Object.values(doc.paths).flatMap((item) => Object.values(item).map((op) => op.operationId))
    expect(new Set(ids).size).toBe(ids.length)
    for (const item of Object.values(doc.paths))
      for (const op of Object.values(item)) expect(Object.keys(op.responses).length).toBeGreaterThan(0)
  })

  it("documents every registered Management and Public route, and nothing else", () => {
    const inTable = registered()
    const inDoc = documented()
    expect(inTable.size).toBeGreaterThan(100)
    const undocumented = [...inTable].filter((r) => !inDoc.has(r) && !excluded(r)).sort()
    const unregistered = [...inDoc].filter((r) => !inTable.has(r)).sort()
    expect({ undocumented, unregistered }).toEqual({ undocumented: [], unregistered: [] })
    // every exclusion names registered routes, none of them documented
    for (const [prefix] of EXCLUDED) {
      const named = [...inTable].filter((r) => matches(prefix, r))
      expect(named.length, prefix).toBeGreaterThan(0)
      expect(
        named.filter((r) => inDoc.has(r)),
        prefix,
      ).toEqual([])
    }
  })
})
