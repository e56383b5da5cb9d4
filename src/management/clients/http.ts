import { Effect } from "effect"
import { json } from "../../http/route.js"
import { endpoint } from "../conventions/endpoint.js"
import { withEtag } from "../conventions/etag.js"
import { pageOf, parsePage } from "../conventions/pagination.js"
import type { ClientRow } from "./repo.js"
import {
  Client,
  ClientList,
  ClientParams,
  ClientWithSecret,
  CreateClientBody,
  Deleted,
  ListClientsQuery,
  UpdateClientBody,
} from "./schema.js"
import * as service from "./service.js"

const tags = ["Clients"]

/** The wire form; `client_secret` is never part of it (only creation and rotation add it). */
export const presentClient = (row: ClientRow): typeof Client.Type => ({
  id: row.id,
  client_id: row.id,
  environment_id: row.environment_id,
  client_type: row.client_type,
  name: row.name,
  token_endpoint_auth_method: row.token_endpoint_auth_method,
  redirect_uris: row.redirect_uris,
  post_logout_redirect_uris: row.post_logout_redirect_uris,
  allowed_origins: row.allowed_origins,
  allowed_scopes: row.allowed_scopes,
  allowed_resources: row.allowed_resources,
  require_pkce: row.require_pkce,
  status: row.status,
  mobile_app: row.mobile_app,
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString(),
})

const withSecret = (row: ClientRow, secret: string | undefined) =>
  secret === undefined ? presentClient(row) : { ...presentClient(row), client_secret: secret }

// Secrets are in some of these answers: never cacheable.
const noStore = { "cache-control": "no-store" }

const ifMatch = { resource: (p: typeof ClientParams.Type) => p.clientId }

export const clientRoutes = [
  endpoint(
    {
      method: "GET",
      path: "/v1/clients",
      summary: "List the Clients of an Environment",
      tags,
      scope: "clients:read",
      query: ListClientsQuery,
      response: ClientList,
    },
    ({ query }) =>
      Effect.gen(function* () {
        const page = yield* parsePage(query)
        const rows = yield* service.listClients(query, page)
        return json(pageOf(rows, page, (r) => r.id, presentClient))
      }),
  ),

  endpoint(
    {
      method: "POST",
      path: "/v1/clients",
      summary: "Create a Client (a secret-method client's client_secret is returned this once)",
      tags,
      scope: "clients:write",
      body: CreateClientBody,
      response: ClientWithSecret,
      status: 201,
      idempotent: true,
    },
    ({ body }) =>
      Effect.map(service.createClient(body), ({ row, secret }) =>
        withEtag(
          json(withSecret(row, secret), 201, { ...noStore, location: `/v1/clients/${row.id}` }),
          row.id,
          row.version,
        ),
      ),
  ),

  endpoint(
    {
      method: "GET",
      path: "/v1/clients/:clientId",
      summary: "Get a Client",
      tags,
      scope: "clients:read",
      params: ClientParams,
      response: Client,
    },
    ({ params }) =>
      Effect.map(service.getClient(params.clientId), (row) => withEtag(json(presentClient(row)), row.id, row.version)),
  ),

  endpoint(
    {
      method: "PATCH",
      path: "/v1/clients/:clientId",
      summary: "Update a Client (If-Match supported)",
      tags,
      scope: "clients:write",
      params: ClientParams,
      body: UpdateClientBody,
      response: Client,
      idempotent: true,
      ifMatch,
    },
    ({ params, body, expectedVersion }) =>
      Effect.map(service.updateClient(params.clientId, body, expectedVersion), (row) =>
        withEtag(json(presentClient(row)), row.id, row.version),
      ),
  ),

  endpoint(
    {
      method: "DELETE",
      path: "/v1/clients/:clientId",
      summary: "Delete a Client (logical; If-Match supported)",
      tags,
      scope: "clients:write",
      params: ClientParams,
      response: Deleted,
      idempotent: true,
      ifMatch,
    },
    ({ params, expectedVersion }) =>
      Effect.map(service.deleteClient(params.clientId, expectedVersion), (id) => json({ id, deleted: true })),
  ),

  endpoint(
    {
      method: "POST",
      path: "/v1/clients/:clientId/rotate-secret",
      summary: "Replace a Client's secret; the new client_secret is returned this once and the old one stops working",
      tags,
      scope: "clients:rotate_secret",
      params: ClientParams,
      response: ClientWithSecret,
      idempotent: true,
      ifMatch,
    },
    ({ params, expectedVersion }) =>
      Effect.map(service.rotateClientSecret(params.clientId, expectedVersion), ({ row, secret }) =>
        withEtag(json(withSecret(row, secret), 200, noStore), row.id, row.version),
      ),
  ),
]
