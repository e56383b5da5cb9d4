import { Clock, Effect } from "effect"
import { Forbidden, InvalidRequest, NotFound } from "../../http/errors.js"
import { Audit } from "../../platform/audit.js"
import { environmentById } from "../../tenancy/repo.js"
import { Tenancy } from "../../tenancy/service.js"
import { environmentForCaller } from "../auth/access.js"
import { type Caller, CurrentCaller } from "../auth/caller.js"
import { requireWorkspaceMatch } from "../auth/service.js"
import type { Page } from "../conventions/pagination.js"
import { ScopesExceedCaller } from "./errors.js"
import * as repo from "./repo.js"

const notFound = () => new NotFound({ detail: "API key not found" })

/** An Environment-pinned caller sees and manages only keys pinned to its own Environment. */
const visibleTo = (caller: Caller, row: repo.ApiKeyRow) =>
  caller.environmentId === null || row.environment_id === caller.environmentId

export const listApiKeys = Effect.fnUntraced(function* (
  query: { workspace_id: string; environment_id?: string | undefined } & Page,
) {
  yield* requireWorkspaceMatch(query.workspace_id)
  const caller = yield* CurrentCaller
  // An explicit Environment filter must name an Environment the caller may reach (404 otherwise).
  if (query.environment_id !== undefined) yield* environmentForCaller(query.environment_id, { allowDeleted: true })
  const environmentId = query.environment_id ?? caller.environmentId ?? undefined
  return yield* repo
    .apiKeysPage(caller.workspaceId, { environmentId, after: query.after, limit: query.limit })
    .pipe(Effect.orDie)
})

/**
 * A caller never mints a key wider than itself (docs/decisions/management-api.md):
 * - its scopes must all be held by the caller (403 insufficient_scope);
 * - an Environment-pinned caller creates only keys pinned to its own Environment (403);
 * - a caller key that expires creates only keys expiring no later than itself (403).
 * Owner/Admin Dashboard sessions hold every scope, no pin and no expiry.
 */
const checkNotWider = Effect.fnUntraced(function* (
  caller: Caller,
  input: { scopes: ReadonlyArray<string>; environmentId: string | null; expiresAt: Date | null },
) {
  const missing = input.scopes.filter((s) => !caller.scopes.has(s))
  if (missing.length > 0) {
    return yield* new ScopesExceedCaller({
      detail: `A key cannot be given scopes its creator lacks: ${missing.join(", ")}`,
    })
  }
  if (caller.environmentId !== null && input.environmentId !== caller.environmentId) {
    return yield* new Forbidden({
      detail: "An Environment-pinned API key can only create keys pinned to its own Environment",
    })
  }
  if (caller.kind === "api_key" && caller.actor.id !== undefined) {
    const self = yield* repo.apiKeyById(caller.workspaceId, caller.actor.id).pipe(Effect.orDie)
    if (self?.expires_at && (input.expiresAt === null || input.expiresAt.getTime() > self.expires_at.getTime())) {
      return yield* new Forbidden({
        detail: `An API key that expires can only create keys expiring no later than itself (${self.expires_at.toISOString()})`,
      })
    }
  }
})

export const createApiKey = Effect.fnUntraced(function* (input: {
  workspace_id: string
  name: string
  scopes: ReadonlyArray<string>
  environment_id?: string | null | undefined
  expires_at?: string | null | undefined
}) {
  yield* requireWorkspaceMatch(input.workspace_id)
  const caller = yield* CurrentCaller
  const tenancy = yield* Tenancy
  const audit = yield* Audit
  const now = yield* Clock.currentTimeMillis
  if (new Set(input.scopes).size !== input.scopes.length)
    return yield* new InvalidRequest({ detail: "scopes must not repeat a scope" })
  const expiresAt = input.expires_at == null ? null : new Date(input.expires_at)
  if (expiresAt !== null && expiresAt.getTime() <= now)
    return yield* new InvalidRequest({ detail: "expires_at must be in the future" })
  const environmentId = input.environment_id ?? null
  if (environmentId !== null) {
    // Must be a live Environment of this Workspace (spec: API key `environment_id`).
    const env = yield* environmentById(environmentId).pipe(Effect.orDie)
    if (!env || env.workspaceId !== caller.workspaceId || env.status === "deleted") {
      // A pinned caller learns nothing about other Environments: it gets the same 403 as for any other id.
      if (caller.environmentId !== null) {
        return yield* new Forbidden({
          detail: "An Environment-pinned API key can only create keys pinned to its own Environment",
        })
      }
      return yield* new InvalidRequest({ detail: "environment_id must be an Environment of this Workspace" })
    }
  }
  yield* checkNotWider(caller, { scopes: input.scopes, environmentId, expiresAt })
  const created = yield* tenancy.createApiKey({
    workspaceId: caller.workspaceId,
    environmentId,
    name: input.name,
    scopes: input.scopes,
    expiresAt,
  })
  yield* audit.append({
    workspaceId: caller.workspaceId,
    environmentId: environmentId ?? undefined,
    actor: caller.actor,
    action: "api_key.created",
    subjectType: "api_key",
    subjectId: created.id,
    details: {
      name: input.name,
      scopes: input.scopes,
      environment_id: environmentId,
      expires_at: expiresAt?.toISOString() ?? null,
    },
  })
  const row = yield* repo.apiKeyById(caller.workspaceId, created.id).pipe(Effect.orDie)
  return { row: row!, secret: created.secret }
})

/**
 * Revokes a key: from now on it authenticates nothing (401). Revoking a revoked key
 * changes nothing and answers the same record.
 */
export const revokeApiKey = Effect.fnUntraced(function* (apiKeyId: string) {
  const caller = yield* CurrentCaller
  const audit = yield* Audit
  const current = yield* repo.apiKeyById(caller.workspaceId, apiKeyId).pipe(Effect.orDie)
  if (!current || !visibleTo(caller, current)) return yield* notFound()
  const now = new Date(yield* Clock.currentTimeMillis)
  const revoked = yield* repo.revokeApiKey(caller.workspaceId, apiKeyId, now).pipe(Effect.orDie)
  if (!revoked) return (yield* repo.apiKeyById(caller.workspaceId, apiKeyId).pipe(Effect.orDie))!
  yield* audit.append({
    workspaceId: caller.workspaceId,
    environmentId: revoked.environment_id ?? undefined,
    actor: caller.actor,
    action: "api_key.revoked",
    subjectType: "api_key",
    subjectId: apiKeyId,
    details: { name: revoked.name },
  })
  return revoked
})
