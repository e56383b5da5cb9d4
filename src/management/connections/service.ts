import { Clock, Effect } from "effect"
import { InvalidRequest } from "../../http/errors.js"
import { Audit } from "../../platform/audit.js"
import { Ids } from "../../platform/ids.js"
import { environmentForCaller } from "../auth/access.js"
import { CurrentCaller } from "../auth/caller.js"
import { requireWorkspaceMatch } from "../auth/service.js"
import { type ExpectedVersion, matchVersion } from "../conventions/etag.js"
import type { Page } from "../conventions/pagination.js"
import { ConnectionAlreadyExists, ConnectionNotFound } from "./errors.js"
import { issuerProblem } from "./issuer.js"
import * as repo from "./repo.js"
import type { CreateConnectionBody, ProfileMapping, Provider, UpdateConnectionBody } from "./schema.js"
import { sealProviderClientSecret } from "./secret.js"

/** Scopes asked of the provider when none are given: enough for the subject, email and name. */
export const DEFAULT_PROVIDER_SCOPES: Readonly<Record<Provider, ReadonlyArray<string>>> = {
  google: ["openid", "email", "profile"],
  apple: ["name", "email"],
  github: ["read:user", "user:email"],
  microsoft: ["openid", "email", "profile"],
  generic_oidc: ["openid", "email", "profile"],
}

const notFound = () => new ConnectionNotFound({ detail: "Connection not found" })

const checkIssuer = Effect.fnUntraced(function* (provider: Provider, issuer: string | null | undefined) {
  if (provider !== "generic_oidc") {
    if (issuer !== undefined && issuer !== null)
      return yield* new InvalidRequest({ detail: `issuer is only for generic_oidc connections, not ${provider}` })
    return
  }
  if (issuer === undefined || issuer === null)
    return yield* new InvalidRequest({ detail: "issuer is required for generic_oidc connections" })
  const problem = issuerProblem(issuer)
  if (problem !== undefined) return yield* new InvalidRequest({ detail: `issuer ${problem}` })
})

/**
 * `profile_mapping.sub` only for generic OIDC (docs/decisions/social-login.md, Social login: "Identities carry
 * their issuer"): Google, Microsoft, GitHub and Apple have a stable subject of their own, and
 * reading it from a claim their users choose (GitHub `login`, Microsoft `preferred_username`)
 * would let anyone take that value.
 */
const checkProfileMapping = (provider: Provider, mapping: ProfileMapping | undefined) =>
  provider !== "generic_oidc" && mapping?.sub !== undefined
    ? Effect.fail(
        new InvalidRequest({
          detail: `profile_mapping.sub may be set only for generic_oidc connections, not ${provider}: its subject is the provider's own`,
        }),
      )
    : Effect.void

/** The claim a mapping reads the subject from (absent: the standard `sub`). */
const subjectClaim = (mapping: ProfileMapping) => mapping.sub ?? "sub"

const checkScopes = (scopes: ReadonlyArray<string> | undefined) => {
  const duplicate = scopes?.find((s, i) => scopes.indexOf(s) !== i)
  return duplicate === undefined
    ? Effect.void
    : Effect.fail(new InvalidRequest({ detail: `scopes lists ${duplicate} twice` }))
}

/** A connection the caller may reach (its Workspace, a reachable Environment); else 404 connection_not_found. */
const reachable = Effect.fnUntraced(function* (id: string, options: { readonly lock: boolean }) {
  const caller = yield* CurrentCaller
  const row = yield* repo.connectionInWorkspace(caller.workspaceId, id, options).pipe(Effect.orDie)
  if (!row) return yield* notFound()
  const env = yield* environmentForCaller(row.environment_id).pipe(Effect.mapError(notFound))
  return { row, env }
})

export const getConnection = (id: string) => reachable(id, { lock: false })

export const listConnections = Effect.fnUntraced(function* (
  query: { environment_id: string; workspace_id?: string | undefined; provider?: string | undefined },
  page: Page,
) {
  yield* requireWorkspaceMatch(query.workspace_id)
  const env = yield* environmentForCaller(query.environment_id)
  const rows = yield* repo.connectionsPage(env.id, { provider: query.provider }, page).pipe(Effect.orDie)
  return { rows, env }
})

export const createConnection = Effect.fnUntraced(function* (body: CreateConnectionBody) {
  const caller = yield* CurrentCaller
  const audit = yield* Audit
  const ids = yield* Ids
  yield* requireWorkspaceMatch(body.workspace_id)
  const env = yield* environmentForCaller(body.environment_id)
  yield* checkIssuer(body.provider, body.issuer)
  yield* checkProfileMapping(body.provider, body.profile_mapping)
  yield* checkScopes(body.scopes)
  yield* repo.lockProviderSlot(env.id).pipe(Effect.orDie)
  const clash = yield* repo.liveConnectionClash(env.id, body.provider, body.provider_key).pipe(Effect.orDie)
  if (clash) {
    return yield* new ConnectionAlreadyExists({
      detail:
        clash.provider === body.provider
          ? `The Environment already has a ${body.provider} connection; change or delete it`
          : `provider_key ${body.provider_key} is already used in this Environment`,
    })
  }
  const id = yield* ids.make("con")
  const now = new Date(yield* Clock.currentTimeMillis)
  const row = yield* repo
    .insertConnection({
      id,
      workspaceId: env.workspaceId,
      environmentId: env.id,
      provider: body.provider,
      mode: body.mode,
      providerKey: body.provider_key,
      now,
      provider_client_id: body.provider_client_id,
      provider_client_secret_sealed: yield* sealProviderClientSecret(id, body.provider_client_secret),
      issuer: body.provider === "generic_oidc" ? (body.issuer ?? null) : null,
      scopes: body.scopes ?? DEFAULT_PROVIDER_SCOPES[body.provider],
      profile_mapping: body.profile_mapping ?? {},
      status: body.status ?? "active",
      // A generic OIDC connection starts unconfirmed, so unusable for login (spec: Connection).
      owner_confirmed: false,
    })
    .pipe(Effect.orDie)
  yield* audit.append({
    workspaceId: env.workspaceId,
    environmentId: env.id,
    actor: caller.actor,
    action: "connection.created",
    subjectType: "connection",
    subjectId: id,
    details: { provider: body.provider, mode: body.mode, provider_key: body.provider_key, issuer: row.issuer },
  })
  return { row, env }
})

export const updateConnection = Effect.fnUntraced(function* (
  id: string,
  patch: UpdateConnectionBody,
  expectedVersion: ExpectedVersion,
) {
  const caller = yield* CurrentCaller
  const audit = yield* Audit
  const changed = Object.keys(patch)
  if (changed.length === 0) return yield* new InvalidRequest({ detail: "Send at least one field to change" })
  const { row: current, env } = yield* reachable(id, { lock: true })
  yield* matchVersion(expectedVersion, current.version)
  if (patch.issuer !== undefined) yield* checkIssuer(current.provider, patch.issuer)
  yield* checkProfileMapping(current.provider, patch.profile_mapping)
  yield* checkScopes(patch.scopes)
  // Changing the issuer clears the Owner's confirmation, unless this same PATCH confirms
  // (spec: Connection). Re-sending the current issuer is no change. The claim the subject is
  // read from decides who an identity is as much as the issuer does (src/social/identity-key.ts),
  // so a change of it is treated the same way.
  const issuerChanged = patch.issuer !== undefined && patch.issuer !== current.issuer
  const subjectClaimChanged =
    patch.profile_mapping !== undefined && subjectClaim(patch.profile_mapping) !== subjectClaim(current.profile_mapping)
  const namespaceChanged = issuerChanged || subjectClaimChanged
  const ownerConfirmed = namespaceChanged
    ? patch.owner_confirmed === true
    : (patch.owner_confirmed ?? current.owner_confirmed)
  const now = new Date(yield* Clock.currentTimeMillis)
  const updated = yield* repo
    .updateConnection(current.id, current.version, {
      provider_client_id: patch.provider_client_id ?? current.provider_client_id ?? "",
      provider_client_secret_sealed:
        patch.provider_client_secret === undefined
          ? (current.provider_client_secret_sealed ?? "")
          : yield* sealProviderClientSecret(current.id, patch.provider_client_secret),
      issuer: patch.issuer ?? current.issuer,
      scopes: patch.scopes ?? current.scopes,
      profile_mapping: patch.profile_mapping ?? current.profile_mapping,
      status: patch.status ?? current.status,
      owner_confirmed: ownerConfirmed,
      now,
    })
    .pipe(Effect.orDie)
  if (!updated) return yield* notFound()
  const base = {
    workspaceId: current.workspace_id,
    environmentId: current.environment_id,
    actor: caller.actor,
    subjectType: "connection",
    subjectId: current.id,
  } as const
  yield* audit.append({
    ...base,
    action: "connection.updated",
    // Field names only: the provider secret never reaches the audit trail.
    details: {
      changed_fields: changed,
      ...(issuerChanged ? { issuer: updated.issuer } : {}),
      ...(subjectClaimChanged
        ? {
            subject_claim: { from: subjectClaim(current.profile_mapping), to: subjectClaim(updated.profile_mapping) },
          }
        : {}),
    },
  })
  if (!current.owner_confirmed && ownerConfirmed)
    yield* audit.append({ ...base, action: "connection.owner_confirmed", details: { issuer: updated.issuer } })
  if (current.owner_confirmed && !ownerConfirmed) {
    yield* audit.append({
      ...base,
      action: "connection.owner_confirmation_cleared",
      details: {
        reason: issuerChanged
          ? "issuer_changed"
          : subjectClaimChanged
            ? "subject_claim_changed"
            : "owner_confirmed_false",
      },
    })
  }
  return { row: updated, env }
})

export const deleteConnection = Effect.fnUntraced(function* (id: string, expectedVersion: ExpectedVersion) {
  const caller = yield* CurrentCaller
  const audit = yield* Audit
  const { row: current } = yield* reachable(id, { lock: true })
  yield* matchVersion(expectedVersion, current.version)
  const now = new Date(yield* Clock.currentTimeMillis)
  if (!(yield* repo.deleteConnection(current.id, current.version, now).pipe(Effect.orDie))) return yield* notFound()
  yield* audit.append({
    workspaceId: current.workspace_id,
    environmentId: current.environment_id,
    actor: caller.actor,
    action: "connection.deleted",
    subjectType: "connection",
    subjectId: current.id,
    details: { provider: current.provider },
  })
  return current.id
})
