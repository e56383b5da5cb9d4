import { Effect } from "effect"
import { decodeJsonBody, decodeParams, decodeQuery, json, route } from "../../http/route.js"
import { withCaller } from "../auth/service.js"
import { withEtag } from "../http/etag.js"
import { pageOf, parsePage } from "../http/pagination.js"
import { withIdempotency } from "../http/idempotency.js"
import type { ClientRow } from "./repo.js"
import {
  Client, ClientList, ClientParams, ClientWithSecret, CreateClientBody, Deleted, ListClientsQuery, UpdateClientBody,
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

export const clientRoutes = [
  route("GET", "/v1/clients", withCaller("clients:read", Effect.gen(function* () {
    const query = yield* decodeQuery(ListClientsQuery)
    const page = yield* parsePage(query)
    const rows = yield* service.listClients(query, page)
    return json(pageOf(rows, page, (r) => r.id, presentClient))
  })), { summary: "List the Clients of an Environment", tags, scope: "clients:read", query: ListClientsQuery, response: ClientList }),

  route("POST", "/v1/clients", withCaller("clients:write", Effect.gen(function* () {
    const body = yield* decodeJsonBody(CreateClientBody)
    return yield* withIdempotency(Effect.gen(function* () {
      const { row, secret } = yield* service.createClient(body)
      return withEtag(json(withSecret(row, secret), 201, { ...noStore, location: `/v1/clients/${row.id}` }), row.id, row.version)
    }))
  })), {
    summary: "Create a Client (a secret-method client's client_secret is returned this once)", tags, scope: "clients:write",
    body: CreateClientBody, response: ClientWithSecret, status: 201, idempotent: true,
  }),

  route("GET", "/v1/clients/:clientId", withCaller("clients:read", Effect.gen(function* () {
    const { clientId } = yield* decodeParams(ClientParams)
    const row = yield* service.getClient(clientId)
    return withEtag(json(presentClient(row)), row.id, row.version)
  })), { summary: "Get a Client", tags, scope: "clients:read", params: ClientParams, response: Client }),

  route("PATCH", "/v1/clients/:clientId", withCaller("clients:write", Effect.gen(function* () {
    const { clientId } = yield* decodeParams(ClientParams)
    const body = yield* decodeJsonBody(UpdateClientBody)
    return yield* withIdempotency(Effect.gen(function* () {
      const row = yield* service.updateClient(clientId, body)
      return withEtag(json(presentClient(row)), row.id, row.version)
    }))
  })), {
    summary: "Update a Client (If-Match supported)", tags, scope: "clients:write", params: ClientParams, body: UpdateClientBody,
    response: Client, idempotent: true,
  }),

  route("DELETE", "/v1/clients/:clientId", withCaller("clients:write", Effect.gen(function* () {
    const { clientId } = yield* decodeParams(ClientParams)
    return yield* withIdempotency(Effect.gen(function* () {
      const id = yield* service.deleteClient(clientId)
      return json({ id, deleted: true })
    }))
  })), {
    summary: "Delete a Client (logical; If-Match supported)", tags, scope: "clients:write", params: ClientParams, response: Deleted,
    idempotent: true,
  }),

  route("POST", "/v1/clients/:clientId/rotate-secret", withCaller("clients:rotate_secret", Effect.gen(function* () {
    const { clientId } = yield* decodeParams(ClientParams)
    return yield* withIdempotency(Effect.gen(function* () {
      const { row, secret } = yield* service.rotateClientSecret(clientId)
      return withEtag(json(withSecret(row, secret), 200, noStore), row.id, row.version)
    }))
  })), {
    summary: "Replace a Client's secret; the new client_secret is returned this once and the old one stops working",
    tags, scope: "clients:rotate_secret", params: ClientParams, response: ClientWithSecret, idempotent: true,
  }),
]
