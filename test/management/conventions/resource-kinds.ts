import { expect } from "vitest"
import type { Bootstrapped, TestApp } from "../../support/app.js"
import type { TestResponse } from "../../support/http.js"

/**
 * Every Management resource kind whose single-resource answers carry an `ETag` (spec:
 * Management common rules 3 and 4), made through the API, with the writes that accept
 * `If-Match`. The convention tests run each rule over all of them, so a kind that stops
 * honouring a rule fails there by name.
 */
export interface ResourceKind {
  readonly name: string
  /** Makes a new resource of this kind; its create answer (201) and the path of the resource. */
  readonly create: (
    app: TestApp,
    b: Bootstrapped,
  ) => Promise<{ readonly created: TestResponse; readonly path: string; readonly key?: string }>
  /** The path that reads one resource and answers its ETag, when the spec has one. */
  readonly read?: (path: string) => string
  /** A valid update of the resource at `path`; consecutive `n` change it (an update that changes nothing may keep the version). */
  readonly update: { readonly method: "PATCH"; readonly body: (n: number) => unknown; readonly query?: string }
  /** Single-resource writes besides the update that accept If-Match (their paths below the resource). */
  readonly actions: ReadonlyArray<{
    readonly method: "POST" | "DELETE"
    readonly suffix: string
    readonly body?: unknown
  }>
}

let counter = 0
const unique = (label: string) => `${label}-${process.pid}-${++counter}`

const created = async (app: TestApp, path: string, body: unknown, key?: string) => {
  const res = await app.management(path, { method: "POST", body, ...(key ? { key } : {}) })
  expect(res.status, `${path}: ${res.text}`).toBe(201)
  return res
}

export const RESOURCE_KINDS: ReadonlyArray<ResourceKind> = [
  {
    name: "Workspace",
    // The spec has no Workspace delete and Workspaces are made by Dashboard users: bootstrap makes one.
    create: async (app) => {
      const w = await app.bootstrap()
      const res = await app.management(`/v1/workspaces/${w.workspace_id}`, { key: w.api_key })
      expect(res.status, res.text).toBe(200)
      return { created: res, path: `/v1/workspaces/${w.workspace_id}`, key: w.api_key }
    },
    read: (path) => path,
    update: { method: "PATCH", body: (n) => ({ name: `Workspace ${n}` }) },
    actions: [],
  },
  {
    name: "Project",
    create: async (app, b) => {
      const res = await created(app, "/v1/projects", { workspace_id: b.workspace_id, name: unique("Project") })
      return { created: res, path: `/v1/projects/${res.json.id}` }
    },
    read: (path) => path,
    update: { method: "PATCH", body: (n) => ({ name: `Project ${n}` }) },
    actions: [{ method: "DELETE", suffix: "" }],
  },
  {
    name: "Environment",
    create: async (app, b) => {
      const res = await created(app, "/v1/environments", {
        project_id: b.project_id,
        type: "test",
        name: unique("Environment"),
      })
      return { created: res, path: `/v1/environments/${res.json.id}` }
    },
    read: (path) => path,
    update: { method: "PATCH", body: (n) => ({ name: `Environment ${n}` }) },
    actions: [{ method: "DELETE", suffix: "" }],
  },
  {
    name: "Client",
    create: async (app, b) => {
      const res = await created(app, "/v1/clients", {
        environment_id: b.environment_id,
        client_type: "web_bff",
        name: unique("Client"),
        token_endpoint_auth_method: "client_secret_basic",
      })
      return { created: res, path: `/v1/clients/${res.json.id}` }
    },
    read: (path) => path,
    update: { method: "PATCH", body: (n) => ({ name: `Client ${n}` }) },
    actions: [
      { method: "POST", suffix: "/rotate-secret" },
      { method: "DELETE", suffix: "" },
    ],
  },
  {
    name: "Connection",
    create: async (app, b) => {
      const env = await created(app, "/v1/environments", {
        project_id: b.project_id,
        type: "test",
        name: unique("For a connection"),
      })
      const res = await created(app, "/v1/connections", {
        environment_id: env.json.id,
        provider: "google",
        mode: "byo",
        provider_key: "google",
        provider_client_id: "google-client-id",
        provider_client_secret: "provider-secret-value-0123456789",
      })
      return { created: res, path: `/v1/connections/${res.json.id}` }
    },
    update: { method: "PATCH", body: (n) => ({ provider_client_id: `client-${n}` }) },
    actions: [{ method: "DELETE", suffix: "" }],
  },
  {
    name: "Domain",
    create: async (app, b) => {
      const res = await created(app, "/v1/domains", {
        environment_id: b.environment_id,
        hostname: `${unique("login")}.example.com`,
      })
      return { created: res, path: `/v1/domains/${res.json.id}` }
    },
    read: (path) => path,
    update: { method: "PATCH", body: (n) => ({ rp_enabled: n % 2 === 1 }) },
    actions: [
      { method: "POST", suffix: "/retry-validation" },
      { method: "DELETE", suffix: "" },
    ],
  },
  {
    name: "User",
    create: async (app, b) => {
      const res = await created(app, "/v1/users", {
        environment_id: b.environment_id,
        email: `${unique("user")}@example.com`,
      })
      return { created: res, path: `/v1/users/${res.json.id}?environment_id=${b.environment_id}` }
    },
    read: (path) => path,
    update: { method: "PATCH", body: (n) => ({ name: `User ${n}` }) },
    actions: [
      { method: "POST", suffix: "/block", body: {} },
      { method: "DELETE", suffix: "" },
    ],
  },
  {
    name: "Webhook",
    create: async (app, b) => {
      const res = await created(app, "/v1/webhooks", {
        environment_id: b.environment_id,
        url: `https://hooks.example.com/${unique("in")}`,
        event_types: ["user.created"],
      })
      return { created: res, path: `/v1/webhooks/${res.json.id}` }
    },
    update: { method: "PATCH", body: (n) => ({ url: `https://hooks.example.com/patched-${n}` }) },
    actions: [{ method: "DELETE", suffix: "" }],
  },
]

/** `/v1/users/usr_...?environment_id=...` + `/block` -> `/v1/users/usr_.../block?environment_id=...` */
export const below = (path: string, suffix: string) => {
  const [base, query] = path.split("?") as [string, string | undefined]
  return `${base}${suffix}${query === undefined ? "" : `?${query}`}`
}

/** `"<id>.<version>"` (docs/decisions/management-api.md: ETag). */
export const etagOf = (id: string, version: number) => `"${id}.${version}"`
