import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import type { EnvironmentRecord } from "../../tenancy/schema.js"
import { authenticateApiKey } from "../../management/auth/service.js"
import { authenticateClient, presentedClient } from "../token/client-auth.js"
import type { OAuthClientRow } from "../token/client-repo.js"
import type { OAuthParams } from "../token/params.js"
import { limitOAuthRequest } from "../token/rate-limit.js"
import { Config } from "../../platform/config.js"
import { addressSteps, makeChainCounter } from "../../rate-limit/service.js"
import { writeLimits } from "../../rate-limit/write-limits.js"

/** An allowed caller: the authenticated web_bff client's row, or a Management API key. */
export type IntrospectionCaller = { readonly client: OAuthClientRow } | { readonly apiKey: true }

/**
 * Who may introspect (spec: Introspect): a web_bff client by client_secret_basic or
 * client_secret_post, or `X-Management-API-Key` with scope `introspect` whose Workspace
 * owns this Environment and which is either Workspace-scoped or pinned to this very
 * Environment. Anyone else is "not allowed", which the endpoint answers with
 * `{active:false}` like an inactive token, revealing nothing (undefined here).
 */
export const introspectionCaller = Effect.fnUntraced(function* (env: EnvironmentRecord, params: OAuthParams) {
  const request = yield* HttpServerRequest.HttpServerRequest
  const apiKey = request.headers["x-management-api-key"]
  if (apiKey !== undefined) {
    const caller = yield* authenticateApiKey(apiKey.trim()).pipe(Effect.option)
    if (caller._tag === "None") return undefined
    const key = caller.value
    const allowed =
      key.scopes.has("introspect") &&
      key.workspaceId === env.workspaceId &&
      (key.environmentId === null || key.environmentId === env.id)
    return allowed ? ({ apiKey: true } as IntrospectionCaller) : undefined
  }
  const presented = yield* presentedClient(params).pipe(Effect.option)
  if (presented._tag === "None" || presented.value.method === "none") return undefined
  const client = yield* authenticateClient(env.id, presented.value).pipe(Effect.option)
  return client._tag === "Some" && client.value.token_endpoint_auth_method !== "none"
    ? ({ client: client.value } as IntrospectionCaller)
    : undefined
})

/**
 * Counts an introspection per caller and address: a Management API key's calls under one
 * name (`api_key`, which names no client), a client's under its id, before either is
 * authenticated (a flood of bad credentials is counted too).
 */
export const limitIntrospection = Effect.fnUntraced(function* (environmentId: string, params: OAuthParams) {
  const request = yield* HttpServerRequest.HttpServerRequest
  if (request.headers["x-management-api-key"] !== undefined)
    return yield* limitOAuthRequest("introspect", environmentId, API_KEY_CALLER)
  const presented = yield* presentedClient(params).pipe(Effect.option)
  yield* limitOAuthRequest(
    "introspect",
    environmentId,
    presented._tag === "Some" ? presented.value.clientId : undefined,
  )
})

const API_KEY_CALLER = "api_key"

/**
 * `limitIntrospection`'s count for a caller already known to be the client `clientId` of this
 * Environment, from a given address, without a fiber (the listener's introspection from memory):
 * the same limits, chain and key, so both paths share one budget.
 */
export const makeIntrospectionCounter = Effect.gen(function* () {
  const config = yield* Config
  const count = yield* makeChainCounter
  const limits = writeLimits(config.rateLimits).introspect
  return (environmentId: string, clientId: string, ip: string | undefined) =>
    count(environmentId, addressSteps(limits, ip, clientId))
})
