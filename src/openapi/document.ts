import { Schema } from "effect"
import { MAX_FIELD_ERRORS } from "../http/field-errors.js"
import { type Route, routeTemplate } from "../http/route.js"

type JsonObject = Record<string, unknown>

/**
 * The OpenAPI 3.1 document of the Public and Management APIs, generated from the very
 * schemas the routes decode with, so it cannot drift from the code.
 */
export const openApiDocument = (
  surfaces: ReadonlyArray<{ readonly name: string; readonly server: string; readonly routes: ReadonlyArray<Route> }>,
) => {
  const components: Record<string, unknown> = { ...problemComponent }
  const toSchema = (schema: Schema.Top) => {
    const doc = Schema.toJsonSchemaDocument(schema as Parameters<typeof Schema.toJsonSchemaDocument>[0])
    for (const [name, definition] of Object.entries(doc.definitions)) components[name] = rewriteRefs(definition)
    return rewriteRefs(doc.schema) as JsonObject
  }
  const paths: Record<string, Record<string, unknown>> = {}
  for (const surface of surfaces) {
    for (const route of surface.routes) {
      if (!route.doc || route.method === "OPTIONS") continue
      const doc = route.doc
      const path = routeTemplate(route.path)
      const parameters: Array<unknown> = []
      for (const [location, schema] of [
        ["path", doc.params],
        ["query", doc.query],
      ] as const) {
        if (!schema) continue
        const json = toSchema(schema)
        const properties = (json["properties"] ?? {}) as Record<string, unknown>
        const required = new Set((json["required"] ?? []) as Array<string>)
        for (const [name, property] of Object.entries(properties)) {
          parameters.push({ name, in: location, required: location === "path" || required.has(name), schema: property })
        }
      }
      if (doc.idempotent) {
        parameters.push({
          name: "Idempotency-Key",
          in: "header",
          required: false,
          schema: { type: "string", maxLength: 255 },
          description:
            "Replays the first 2xx answer (24 h) to the same credential (API key or Dashboard user) for the same method, path and body",
        })
      }
      if (doc.ifMatch) {
        parameters.push({
          name: "If-Match",
          in: "header",
          required: doc.ifMatch === "required",
          schema: { type: "string" },
          description:
            doc.ifMatch === "required"
              ? "The ETag of the resource as last read; without it 428 precondition_required, another version 412 precondition_failed"
              : "The ETag of the resource as last read (or *); another version gives 412 precondition_failed",
        })
      }
      const status = String(doc.status ?? 200)
      const operation: JsonObject = {
        summary: doc.summary,
        operationId: `${route.method.toLowerCase()}${path.replace(/[{}]/g, "").replace(/[^a-zA-Z0-9]+(.)?/g, (_, c: string | undefined) => (c ?? "").toUpperCase())}`,
        tags: doc.tags ?? [surface.name],
        servers: [{ url: surface.server }],
        ...(parameters.length > 0 ? { parameters } : {}),
        ...(doc.body
          ? { requestBody: { required: true, content: { "application/json": { schema: toSchema(doc.body) } } } }
          : {}),
        responses: {
          [status]: doc.response
            ? { description: "Success", content: { "application/json": { schema: toSchema(doc.response) } } }
            : { description: "Success" },
          default: {
            description: "Problem Details",
            content: { "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } } },
          },
        },
        ...(doc.scope
          ? {
              "x-required-scope": doc.scope,
              security: [{ apiKey: [] }, { dashboardSession: [] }, { dashboardCookie: [] }],
            }
          : {}),
      }
      paths[path] = { ...paths[path], [route.method.toLowerCase()]: operation }
    }
  }
  return {
    openapi: "3.1.0",
    info: { title: "authservice Public Authentication and Management APIs", version: "1" },
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        apiKey: { type: "http", scheme: "bearer", description: "Management API key (sk_live_...)" },
        dashboardSession: {
          type: "http",
          scheme: "bearer",
          description:
            "Dashboard session (dsh_..., from `npm run cli -- dashboard-session create`); send X-Workspace-Id",
        },
        // CSRF rule of src/management/auth/csrf.ts.
        dashboardCookie: {
          type: "apiKey",
          in: "cookie",
          name: "dashboard_session",
          description:
            "Dashboard session as a cookie; send X-Workspace-Id. Writes need an Origin listed in DASHBOARD_ORIGINS and a JSON body, else 403 forbidden",
        },
      },
    },
  }
}

const rewriteRefs = (value: unknown): unknown =>
  JSON.parse(JSON.stringify(value).replaceAll('"#/$defs/', '"#/components/schemas/'))

const problemComponent = {
  Problem: {
    type: "object",
    required: ["type", "title", "status", "code", "request_id"],
    properties: {
      type: { type: "string", format: "uri" },
      title: { type: "string" },
      status: { type: "integer" },
      code: { type: "string" },
      request_id: { type: "string", pattern: "^req_" },
      detail: { type: "string" },
      errors: {
        type: "array",
        maxItems: MAX_FIELD_ERRORS,
        description: `400 invalid_request / invalid_request_body of a JSON body: every invalid field (at most ${MAX_FIELD_ERRORS}), in the order checked`,
        items: {
          type: "object",
          required: ["pointer", "detail"],
          properties: {
            pointer: {
              type: "string",
              description: "RFC 6901 JSON Pointer into the request body; empty for the body itself",
            },
            detail: { type: "string", description: "The rule the value breaks" },
          },
        },
      },
    },
  },
}
