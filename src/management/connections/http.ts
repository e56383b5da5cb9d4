import { Effect } from "effect"
import { json } from "../../http/route.js"
import { type AppConfig, Config } from "../../platform/config.js"
import type { EnvironmentRecord } from "../../tenancy/schema.js"
import { environmentUrls } from "../../tenancy/urls.js"
import { endpoint } from "../conventions/endpoint.js"
import { withEtag } from "../conventions/etag.js"
import { pageOf, parsePage } from "../conventions/pagination.js"
import { connectionCallbackUrl } from "./callback-url.js"
import type { ConnectionRow } from "./repo.js"
import {
  Connection,
  ConnectionList,
  ConnectionParams,
  CreateConnectionBody,
  Deleted,
  ListConnectionsQuery,
  UpdateConnectionBody,
} from "./schema.js"
import * as service from "./service.js"

const tags = ["Connections"]

const callbackUrl = (config: AppConfig, env: EnvironmentRecord, row: ConnectionRow) =>
  connectionCallbackUrl(environmentUrls(config, env), row)

/** The wire form: `provider_client_secret` is write-only and never in it. */
const present =
  (config: AppConfig, env: EnvironmentRecord) =>
  (row: ConnectionRow): typeof Connection.Type => ({
    id: row.id,
    environment_id: row.environment_id,
    provider: row.provider,
    mode: row.mode,
    provider_key: row.provider_key,
    provider_client_id: row.provider_client_id,
    issuer: row.issuer,
    scopes: row.scopes,
    profile_mapping: row.profile_mapping,
    status: row.status,
    owner_confirmed: row.owner_confirmed,
    callback_url: callbackUrl(config, env, row),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  })

const one = (result: { row: ConnectionRow; env: EnvironmentRecord }, status = 200) =>
  Effect.gen(function* () {
    const config = yield* Config
    const body = present(config, result.env)(result.row)
    const headers = status === 201 ? { location: `/v1/connections/${result.row.id}` } : undefined
    return withEtag(json(body, status, headers), result.row.id, result.row.version)
  })

const ifMatch = { resource: (p: typeof ConnectionParams.Type) => p.connectionId }

export const connectionRoutes = [
  endpoint(
    {
      method: "GET",
      path: "/v1/connections",
      summary: "List the Connections (social providers) of an Environment",
      tags,
      scope: "connections:read",
      query: ListConnectionsQuery,
      response: ConnectionList,
    },
    ({ query }) =>
      Effect.gen(function* () {
        const page = yield* parsePage(query)
        const { rows, env } = yield* service.listConnections(query, page)
        return json(pageOf(rows, page, (r) => r.id, present(yield* Config, env)))
      }),
  ),

  endpoint(
    {
      method: "POST",
      path: "/v1/connections",
      summary: "Create a Connection (provider_client_secret is write-only)",
      tags,
      scope: "connections:write",
      body: CreateConnectionBody,
      response: Connection,
      status: 201,
      idempotent: true,
    },
    ({ body }) => Effect.flatMap(service.createConnection(body), (r) => one(r, 201)),
  ),

  endpoint(
    {
      method: "GET",
      path: "/v1/connections/:connectionId",
      summary: "Get a Connection",
      tags,
      scope: "connections:read",
      params: ConnectionParams,
      response: Connection,
    },
    ({ params }) => Effect.flatMap(service.getConnection(params.connectionId), (r) => one(r)),
  ),

  endpoint(
    {
      method: "PATCH",
      path: "/v1/connections/:connectionId",
      summary:
        "Update a Connection; owner_confirmed true confirms a generic_oidc connection, a changed issuer clears it (If-Match supported)",
      tags,
      scope: "connections:write",
      params: ConnectionParams,
      body: UpdateConnectionBody,
      response: Connection,
      idempotent: true,
      ifMatch,
    },
    ({ params, body, expectedVersion }) =>
      Effect.flatMap(service.updateConnection(params.connectionId, body, expectedVersion), (r) => one(r)),
  ),

  endpoint(
    {
      method: "DELETE",
      path: "/v1/connections/:connectionId",
      summary: "Delete a Connection (logical; If-Match supported)",
      tags,
      scope: "connections:write",
      params: ConnectionParams,
      response: Deleted,
      idempotent: true,
      ifMatch,
    },
    ({ params, expectedVersion }) =>
      Effect.map(service.deleteConnection(params.connectionId, expectedVersion), (id) => json({ id, deleted: true })),
  ),
]
