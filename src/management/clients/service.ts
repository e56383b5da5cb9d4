import { Clock, Effect } from "effect"
import { InvalidRequest, NotFound } from "../../http/errors.js"
import { Audit } from "../../platform/audit.js"
import { Ids } from "../../platform/ids.js"
import { environmentForCaller } from "../auth/access.js"
import { CurrentCaller } from "../auth/caller.js"
import { requireWorkspaceMatch } from "../auth/service.js"
import { type ExpectedVersion, matchVersion } from "../conventions/etag.js"
import type { Page } from "../conventions/pagination.js"
import { InvalidRedirectUri } from "./errors.js"
import { allowedOriginProblem } from "./origin.js"
import { type ClientType, redirectUriProblem } from "./redirect-uri.js"
import * as repo from "./repo.js"
import { allowedResourceProblem } from "./resource.js"
import type { CreateClientBody, MobileApp, MobileAppInput, UpdateClientBody } from "./schema.js"
import { allowedAuthMethods, newClientSecret } from "./secret.js"

const DEFAULT_SCOPES = ["openid", "profile", "email", "offline_access"] as const

const notFound = () => new NotFound({ detail: "Client not found" })

const duplicateOf = (values: ReadonlyArray<string>) => values.find((v, i) => values.indexOf(v) !== i)

const checkAuthMethod = (clientType: ClientType, method: repo.ClientRow["token_endpoint_auth_method"]) =>
  (allowedAuthMethods[clientType] as ReadonlyArray<string>).includes(method)
    ? Effect.void
    : Effect.fail(
        new InvalidRequest({
          detail: `token_endpoint_auth_method ${method} is not allowed for client_type ${clientType}; use ${allowedAuthMethods[clientType].join(" or ")}`,
        }),
      )

const checkRedirectUris = Effect.fnUntraced(function* (
  clientType: ClientType,
  field: string,
  uris: ReadonlyArray<string> | undefined,
) {
  if (uris === undefined) return
  for (const [i, uri] of uris.entries()) {
    const problem = redirectUriProblem(clientType, uri)
    if (problem !== undefined) return yield* new InvalidRedirectUri({ detail: `${field}[${i}] ${problem}` })
  }
  const duplicate = duplicateOf(uris)
  if (duplicate !== undefined) return yield* new InvalidRedirectUri({ detail: `${field} lists ${duplicate} twice` })
})

const checkEach = Effect.fnUntraced(function* (
  field: string,
  values: ReadonlyArray<string> | undefined,
  problemOf: (v: string) => string | undefined,
) {
  if (values === undefined) return
  for (const [i, value] of values.entries()) {
    const problem = problemOf(value)
    if (problem !== undefined) return yield* new InvalidRequest({ detail: `${field}[${i}] ${problem}` })
  }
  const duplicate = duplicateOf(values)
  if (duplicate !== undefined) return yield* new InvalidRequest({ detail: `${field} lists ${duplicate} twice` })
})

/** `mobile_app` exists only for `react_native`; `null` clears it; the object replaces the stored one. */
const mobileAppOf = Effect.fnUntraced(function* (clientType: ClientType, input: MobileAppInput | null | undefined) {
  if (input === undefined || input === null) return null
  if (clientType !== "react_native") {
    return yield* new InvalidRequest({ detail: "mobile_app is only for react_native clients" })
  }
  if (Object.keys(input).length === 0) {
    return yield* new InvalidRequest({ detail: "mobile_app needs at least one field (send null to clear it)" })
  }
  const fingerprints = input.android_sha256_fingerprints ?? []
  const duplicate = duplicateOf(fingerprints.map((f) => f.toUpperCase()))
  if (duplicate !== undefined)
    return yield* new InvalidRequest({ detail: `mobile_app.android_sha256_fingerprints lists ${duplicate} twice` })
  const app: MobileApp = {
    app_scheme: input.app_scheme ?? null,
    ios_bundle_id: input.ios_bundle_id ?? null,
    ios_team_id: input.ios_team_id ?? null,
    android_package_name: input.android_package_name ?? null,
    android_sha256_fingerprints: fingerprints,
    universal_link_host: input.universal_link_host ?? null,
  }
  return app
})

/** Every rule on the settable fields that are present (spec: Client; Authentication rules 1, 9, 10). */
const checkFields = Effect.fnUntraced(function* (clientType: ClientType, fields: UpdateClientBody) {
  if (fields.token_endpoint_auth_method !== undefined)
    yield* checkAuthMethod(clientType, fields.token_endpoint_auth_method)
  yield* checkRedirectUris(clientType, "redirect_uris", fields.redirect_uris)
  yield* checkRedirectUris(clientType, "post_logout_redirect_uris", fields.post_logout_redirect_uris)
  yield* checkEach("allowed_origins", fields.allowed_origins, allowedOriginProblem)
  yield* checkEach("allowed_scopes", fields.allowed_scopes, () => undefined)
  yield* checkEach("allowed_resources", fields.allowed_resources, allowedResourceProblem)
})

/**
 * A client the caller may reach: in its Workspace, not deleted, and in an Environment the
 * caller may address (pinned keys: their own). Anything else is 404, as if absent.
 */
const reachable = Effect.fnUntraced(function* (id: string, options: { readonly lock: boolean }) {
  const caller = yield* CurrentCaller
  const row = yield* (
    options.lock ? repo.lockClientInWorkspace(caller.workspaceId, id) : repo.clientInWorkspace(caller.workspaceId, id)
  ).pipe(Effect.orDie)
  if (!row) return yield* notFound()
  yield* environmentForCaller(row.environment_id).pipe(Effect.mapError(notFound))
  return row
})

export const getClient = (id: string) => reachable(id, { lock: false })

export const listClients = Effect.fnUntraced(function* (
  query: { environment_id: string; workspace_id?: string | undefined; client_type?: string | undefined },
  page: Page,
) {
  yield* requireWorkspaceMatch(query.workspace_id)
  const env = yield* environmentForCaller(query.environment_id)
  return yield* repo.clientsPage(env.id, { clientType: query.client_type }, page).pipe(Effect.orDie)
})

export const createClient = Effect.fnUntraced(function* (body: CreateClientBody) {
  const caller = yield* CurrentCaller
  const audit = yield* Audit
  const ids = yield* Ids
  yield* requireWorkspaceMatch(body.workspace_id)
  const env = yield* environmentForCaller(body.environment_id)
  yield* checkAuthMethod(body.client_type, body.token_endpoint_auth_method)
  yield* checkFields(body.client_type, body)
  const mobileApp = yield* mobileAppOf(body.client_type, body.mobile_app)
  // A secret only for the secret methods; it is returned this once (spec: Client `client_secret`).
  const secret = body.token_endpoint_auth_method === "none" ? undefined : yield* newClientSecret
  const id = yield* ids.make("cli")
  const now = new Date(yield* Clock.currentTimeMillis)
  const row = yield* repo
    .insertClient({
      id,
      workspaceId: env.workspaceId,
      environmentId: env.id,
      clientType: body.client_type,
      secretHash: secret?.hash ?? null,
      now,
      name: body.name,
      token_endpoint_auth_method: body.token_endpoint_auth_method,
      redirect_uris: body.redirect_uris ?? [],
      post_logout_redirect_uris: body.post_logout_redirect_uris ?? [],
      allowed_origins: body.allowed_origins ?? [],
      allowed_scopes: body.allowed_scopes ?? DEFAULT_SCOPES,
      allowed_resources: body.allowed_resources ?? [],
      require_pkce: body.require_pkce ?? true,
      status: body.status ?? "active",
      mobile_app: mobileApp,
    })
    .pipe(Effect.orDie)
  yield* audit.append({
    workspaceId: env.workspaceId,
    environmentId: env.id,
    actor: caller.actor,
    action: "client.created",
    subjectType: "client",
    subjectId: id,
    details: {
      client_type: body.client_type,
      name: body.name,
      token_endpoint_auth_method: body.token_endpoint_auth_method,
    },
  })
  return { row, secret: secret?.secret }
})

export const updateClient = Effect.fnUntraced(function* (
  id: string,
  patch: UpdateClientBody,
  expectedVersion: ExpectedVersion,
) {
  const caller = yield* CurrentCaller
  const audit = yield* Audit
  const changed = Object.keys(patch)
  if (changed.length === 0) return yield* new InvalidRequest({ detail: "Send at least one field to change" })
  const current = yield* reachable(id, { lock: true })
  yield* matchVersion(expectedVersion, current.version)
  yield* checkFields(current.client_type, patch)
  const mobileApp =
    patch.mobile_app === undefined ? current.mobile_app : yield* mobileAppOf(current.client_type, patch.mobile_app)
  const now = new Date(yield* Clock.currentTimeMillis)
  // client_type never changes, so the auth method can only move between the two secret
  // methods (web_bff) or stay `none`: the stored secret stays valid (docs/decisions/management-api.md).
  const updated = yield* repo
    .updateClient(current.id, current.version, {
      name: patch.name ?? current.name,
      token_endpoint_auth_method: patch.token_endpoint_auth_method ?? current.token_endpoint_auth_method,
      redirect_uris: patch.redirect_uris ?? current.redirect_uris,
      post_logout_redirect_uris: patch.post_logout_redirect_uris ?? current.post_logout_redirect_uris,
      allowed_origins: patch.allowed_origins ?? current.allowed_origins,
      allowed_scopes: patch.allowed_scopes ?? current.allowed_scopes,
      allowed_resources: patch.allowed_resources ?? current.allowed_resources,
      require_pkce: patch.require_pkce ?? current.require_pkce,
      status: patch.status ?? current.status,
      mobile_app: mobileApp,
      now,
    })
    .pipe(Effect.orDie)
  if (!updated) return yield* notFound()
  yield* audit.append({
    workspaceId: current.workspace_id,
    environmentId: current.environment_id,
    actor: caller.actor,
    action: "client.updated",
    subjectType: "client",
    subjectId: current.id,
    details: { changed_fields: changed },
  })
  return updated
})

export const deleteClient = Effect.fnUntraced(function* (id: string, expectedVersion: ExpectedVersion) {
  const caller = yield* CurrentCaller
  const audit = yield* Audit
  const current = yield* reachable(id, { lock: true })
  yield* matchVersion(expectedVersion, current.version)
  const now = new Date(yield* Clock.currentTimeMillis)
  if (!(yield* repo.deleteClient(current.id, current.version, now).pipe(Effect.orDie))) return yield* notFound()
  yield* audit.append({
    workspaceId: current.workspace_id,
    environmentId: current.environment_id,
    actor: caller.actor,
    action: "client.deleted",
    subjectType: "client",
    subjectId: current.id,
  })
  return current.id
})

/**
 * Replaces the secret of a secret-method client; the old one stops working at once (no
 * overlap: the spec gives none for clients, unlike webhooks). Public clients have none.
 */
export const rotateClientSecret = Effect.fnUntraced(function* (id: string, expectedVersion: ExpectedVersion) {
  const caller = yield* CurrentCaller
  const audit = yield* Audit
  const current = yield* reachable(id, { lock: true })
  yield* matchVersion(expectedVersion, current.version)
  if (current.token_endpoint_auth_method === "none") {
    return yield* new InvalidRequest({
      detail: "Clients with token_endpoint_auth_method none have no secret to rotate",
    })
  }
  const secret = yield* newClientSecret
  const now = new Date(yield* Clock.currentTimeMillis)
  const row = yield* repo.replaceSecretHash(current.id, current.version, secret.hash, now).pipe(Effect.orDie)
  if (!row) return yield* notFound()
  yield* audit.append({
    workspaceId: current.workspace_id,
    environmentId: current.environment_id,
    actor: caller.actor,
    action: "client.secret_rotated",
    subjectType: "client",
    subjectId: current.id,
  })
  return { row, secret: secret.secret }
})
