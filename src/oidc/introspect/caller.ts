import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import type { EnvironmentRecord } from "../../tenancy/schema.js"
import { authenticateApiKey } from "../../management/auth/service.js"
import { authenticateClient, presentedClient } from "../token/client-auth.js"
import type { OAuthParams } from "../token/params.js"

/**
 * Who may introspect (spec: Introspect): a web_bff client by client_secret_basic or
 * client_secret_post, or `X-Management-API-Key` with scope `introspect` whose Workspace
 * owns this Environment and which is either Workspace-scoped or pinned to this very
 * Environment. Anyone else is "not allowed", which the endpoint answers with
 * `{active:false}` like an inactive token, revealing nothing.
 */
export const introspectionCallerAllowed = (env: EnvironmentRecord, params: OAuthParams) => Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const apiKey = request.headers["x-management-api-key"]
  if (apiKey !== undefined) {
    const caller = yield* authenticateApiKey(apiKey.trim()).pipe(Effect.option)
    if (caller._tag === "None") return false
    const key = caller.value
    return key.scopes.has("introspect") && key.workspaceId === env.workspaceId &&
      (key.environmentId === null || key.environmentId === env.id)
  }
  const presented = yield* presentedClient(params).pipe(Effect.option)
  if (presented._tag === "None" || presented.value.method === "none") return false
  const client = yield* authenticateClient(env.id, presented.value).pipe(Effect.option)
  return client._tag === "Some" && client.value.token_endpoint_auth_method !== "none"
})
