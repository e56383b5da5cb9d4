import { Clock, Effect } from "effect"
import { json } from "../../http/route.js"
import { endpoint } from "../conventions/endpoint.js"
import { pageOf, parsePage } from "../conventions/pagination.js"
import type { ApiKeyRow } from "./repo.js"
import { ApiKey, ApiKeyList, ApiKeyParams, CreateApiKeyBody, CreatedApiKey, ListApiKeysQuery } from "./schema.js"
import * as service from "./service.js"

const present = (row: ApiKeyRow, now: number) => ({
  id: row.id,
  workspace_id: row.workspace_id,
  environment_id: row.environment_id,
  name: row.name,
  scopes: [...row.scopes],
  expires_at: row.expires_at?.toISOString() ?? null,
  status:
    row.revoked_at !== null
      ? ("revoked" as const)
      : row.expires_at !== null && row.expires_at.getTime() <= now
        ? ("expired" as const)
        : ("active" as const),
  revoked_at: row.revoked_at?.toISOString() ?? null,
  created_at: row.created_at.toISOString(),
})

const tags = ["API keys"]

export const apiKeyRoutes = [
  endpoint(
    {
      method: "GET",
      path: "/v1/api-keys",
      summary: "List API keys (never their secrets)",
      tags,
      scope: "api_keys:read",
      query: ListApiKeysQuery,
      response: ApiKeyList,
    },
    ({ query }) =>
      Effect.gen(function* () {
        const page = yield* parsePage(query)
        const rows = yield* service.listApiKeys({
          ...page,
          workspace_id: query.workspace_id,
          environment_id: query.environment_id,
        })
        const now = yield* Clock.currentTimeMillis
        return json(
          pageOf(
            rows,
            page,
            (r) => r.id,
            (r) => present(r, now),
          ),
        )
      }),
  ),

  endpoint(
    {
      method: "POST",
      path: "/v1/api-keys",
      summary:
        "Create an API key; the secret (sk_live_...) is returned once. A key never creates a key wider than itself",
      tags,
      scope: "api_keys:write",
      body: CreateApiKeyBody,
      response: CreatedApiKey,
      status: 201,
      idempotent: true,
    },
    ({ body }) =>
      Effect.gen(function* () {
        const { row, secret } = yield* service.createApiKey(body)
        const now = yield* Clock.currentTimeMillis
        return json({ ...present(row, now), secret }, 201, { "cache-control": "no-store" })
      }),
  ),

  endpoint(
    {
      method: "POST",
      path: "/v1/api-keys/:apiKeyId/revoke",
      summary: "Revoke an API key (it authenticates nothing afterwards)",
      tags,
      scope: "api_keys:write",
      params: ApiKeyParams,
      response: ApiKey,
      idempotent: true,
    },
    ({ params }) =>
      Effect.gen(function* () {
        const row = yield* service.revokeApiKey(params.apiKeyId)
        return json(present(row, yield* Clock.currentTimeMillis))
      }),
  ),
]

export { ApiKey }
