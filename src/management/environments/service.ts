import { Clock, Effect } from "effect"
import { Forbidden, InvalidRequest, NotFound, PreconditionFailed } from "../../http/errors.js"
import { Audit } from "../../platform/audit.js"
import { environmentById, environmentsByIds } from "../../tenancy/repo.js"
import type { EnvironmentRecord } from "../../tenancy/schema.js"
import { Tenancy } from "../../tenancy/service.js"
import { environmentForCaller } from "../auth/access.js"
import { CurrentCaller } from "../auth/caller.js"
import { requireWorkspaceMatch } from "../auth/service.js"
import { etagOf, type ExpectedVersion, matchVersion } from "../conventions/etag.js"
import type { Page } from "../conventions/pagination.js"
import { reachableProject } from "../projects/service.js"
import { NoLegacyRpId } from "./errors.js"
import * as repo from "./repo.js"
import { resolveTheme, type Theme, themeFromInput, type ThemeInput } from "./theme.js"

const notFound = () => new NotFound({ detail: "Environment not found" })

/** Re-reads the record after a write (same transaction) for the response. */
const reload = (id: string) =>
  environmentById(id).pipe(
    Effect.orDie,
    Effect.flatMap((r) => (r ? Effect.succeed(r) : Effect.fail(notFound()))),
  )

/** Locks the Environment the caller may reach (404 otherwise) for the rest of the transaction. */
const lockReachable = Effect.fnUntraced(function* (environmentId: string) {
  const caller = yield* CurrentCaller
  yield* environmentForCaller(environmentId)
  const locked = yield* repo.lockEnvironment(caller.workspaceId, environmentId).pipe(Effect.orDie)
  return locked ?? (yield* notFound())
})

export const listEnvironments = Effect.fnUntraced(function* (
  query: { project_id: string; type?: string | undefined; workspace_id?: string | undefined } & Page,
) {
  yield* requireWorkspaceMatch(query.workspace_id)
  const caller = yield* CurrentCaller
  const project = yield* reachableProject(query.project_id)
  const ids = yield* repo
    .environmentIdsPage(caller.workspaceId, project.id, {
      type: query.type,
      after: query.after,
      limit: query.limit,
      onlyId: caller.environmentId ?? undefined,
    })
    .pipe(Effect.orDie)
  return yield* environmentsByIds(ids).pipe(Effect.orDie)
})

/** Creates an Environment and its first signing key (Tenancy.createEnvironment). */
export const createEnvironment = Effect.fnUntraced(function* (input: {
  project_id: string
  type: "test" | "production"
  name: string
  workspace_id?: string | undefined
}) {
  yield* requireWorkspaceMatch(input.workspace_id)
  const caller = yield* CurrentCaller
  const tenancy = yield* Tenancy
  const audit = yield* Audit
  const project = yield* reachableProject(input.project_id)
  if (caller.environmentId !== null) {
    return yield* new Forbidden({ detail: "An Environment-pinned API key cannot create Environments" })
  }
  const { id } = yield* tenancy.createEnvironment({
    workspaceId: caller.workspaceId,
    projectId: project.id,
    type: input.type,
    name: input.name,
  })
  yield* audit.append({
    workspaceId: caller.workspaceId,
    environmentId: id,
    actor: caller.actor,
    action: "environment.created",
    subjectType: "environment",
    subjectId: id,
    details: { project_id: project.id, type: input.type, name: input.name },
  })
  return yield* reload(id)
})

/** PATCH: `name` and/or `status` (`active` / `suspended`). */
export const updateEnvironment = Effect.fnUntraced(function* (
  environmentId: string,
  change: { name?: string | undefined; status?: "active" | "suspended" | undefined },
  expectedVersion: ExpectedVersion,
) {
  const caller = yield* CurrentCaller
  const audit = yield* Audit
  const locked = yield* lockReachable(environmentId)
  if (change.name === undefined && change.status === undefined)
    return yield* new InvalidRequest({ detail: "Send name and/or status" })
  yield* matchVersion(expectedVersion, locked.version)
  const now = new Date(yield* Clock.currentTimeMillis)
  if (
    !(yield* repo
      .updateEnvironment(caller.workspaceId, environmentId, locked.version, { ...change, now })
      .pipe(Effect.orDie))
  ) {
    return yield* new PreconditionFailed()
  }
  const statusChanged = change.status !== undefined && change.status !== locked.status
  yield* audit.append({
    workspaceId: caller.workspaceId,
    environmentId,
    actor: caller.actor,
    action: statusChanged
      ? change.status === "suspended"
        ? "environment.suspended"
        : "environment.activated"
      : "environment.updated",
    subjectType: "environment",
    subjectId: environmentId,
    details: {
      changed_fields: Object.keys(change),
      ...(statusChanged ? { from: locked.status, to: change.status } : {}),
    },
  })
  return yield* reload(environmentId)
})

/** DELETE: status becomes `deleted` (final; the Environment stops serving everywhere). */
export const deleteEnvironment = Effect.fnUntraced(function* (environmentId: string, expectedVersion: ExpectedVersion) {
  const caller = yield* CurrentCaller
  const audit = yield* Audit
  const locked = yield* lockReachable(environmentId)
  yield* matchVersion(expectedVersion, locked.version)
  const now = new Date(yield* Clock.currentTimeMillis)
  if (
    !(yield* repo
      .updateEnvironment(caller.workspaceId, environmentId, locked.version, { status: "deleted", now })
      .pipe(Effect.orDie))
  ) {
    return yield* new PreconditionFailed()
  }
  yield* audit.append({
    workspaceId: caller.workspaceId,
    environmentId,
    actor: caller.actor,
    action: "environment.deleted",
    subjectType: "environment",
    subjectId: environmentId,
    details: { from: locked.status },
  })
  return yield* reload(environmentId)
})

export const getSettings = (environmentId: string) =>
  Effect.map(environmentForCaller(environmentId), (env) => ({
    impersonation_enabled: env.impersonationEnabled,
    new_user_creation_blocked: env.newUserCreationBlocked,
  }))

/** Settings PATCH: no If-Match, no Idempotency-Key (spec), one transaction with its audit record. */
export const updateSettings = Effect.fnUntraced(function* (
  environmentId: string,
  change: { impersonation_enabled?: boolean | undefined; new_user_creation_blocked?: boolean | undefined },
) {
  const caller = yield* CurrentCaller
  const audit = yield* Audit
  yield* lockReachable(environmentId)
  if (change.impersonation_enabled === undefined && change.new_user_creation_blocked === undefined) {
    return yield* new InvalidRequest({ detail: "Send impersonation_enabled and/or new_user_creation_blocked" })
  }
  const updated = yield* repo.updateSettings(caller.workspaceId, environmentId, change).pipe(Effect.orDie)
  if (!updated) return yield* notFound()
  yield* audit.append({
    workspaceId: caller.workspaceId,
    environmentId,
    actor: caller.actor,
    action: "environment.settings_updated",
    subjectType: "environment",
    subjectId: environmentId,
    details: { ...change },
  })
  return updated
})

/** The theme's ETag is distinct from the Environment's: `"<id>.theme.<version>"`. */
export const themeTag = (environmentId: string) => `${environmentId}.theme`
export const themeEtag = (environmentId: string, version: number) => etagOf(themeTag(environmentId), version)

const storedTheme = (value: unknown) => resolveTheme(typeof value === "string" ? JSON.parse(value) : value)

export const getTheme = Effect.fnUntraced(function* (environmentId: string) {
  const caller = yield* CurrentCaller
  yield* environmentForCaller(environmentId)
  const row = yield* repo.themeOf(caller.workspaceId, environmentId).pipe(Effect.orDie)
  if (!row) return yield* notFound()
  return { theme: storedTheme(row.theme), version: row.theme_version }
})

/**
 * Theme PUT replaces the theme. `If-Match` is required (spec): its endpoint answers 428
 * precondition_required without one; a stale one is 412 precondition_failed here.
 */
export const replaceTheme = Effect.fnUntraced(function* (
  environmentId: string,
  input: typeof ThemeInput.Type,
  expectedVersion: ExpectedVersion,
) {
  const caller = yield* CurrentCaller
  const audit = yield* Audit
  const locked = yield* lockReachable(environmentId)
  yield* matchVersion(expectedVersion, locked.theme_version)
  const theme: Theme = themeFromInput(input)
  const version = yield* repo
    .replaceTheme(caller.workspaceId, environmentId, locked.theme_version, theme)
    .pipe(Effect.orDie)
  if (version === undefined) return yield* new PreconditionFailed()
  yield* audit.append({
    workspaceId: caller.workspaceId,
    environmentId,
    actor: caller.actor,
    action: "environment.theme_updated",
    subjectType: "environment",
    subjectId: environmentId,
    details: { theme },
  })
  return { theme, version }
})

const rpMigrationOf = (env: EnvironmentRecord, activeRpId: string) => ({
  environment_id: env.id,
  active_rp_id: activeRpId,
  legacy_rp_id: env.legacyRpId,
  status:
    env.legacyRpId === null
      ? ("not_started" as const)
      : env.legacyRpDisabledAt === null
        ? ("in_progress" as const)
        : ("completed" as const),
  legacy_disabled_at: env.legacyRpDisabledAt?.toISOString() ?? null,
})
export type RpMigrationView = ReturnType<typeof rpMigrationOf>

export const getRpMigration = (environmentId: string, activeRpIdOf: (env: EnvironmentRecord) => string) =>
  Effect.map(environmentForCaller(environmentId), (env) => rpMigrationOf(env, activeRpIdOf(env)))

/**
 * Stops accepting the legacy RP ID (irreversible). `confirm_rp_id` must equal it;
 * with no legacy RP ID still accepted the answer is 409.
 */
export const disableLegacyRp = Effect.fnUntraced(function* (
  environmentId: string,
  confirmRpId: string,
  activeRpIdOf: (env: EnvironmentRecord) => string,
) {
  const caller = yield* CurrentCaller
  const audit = yield* Audit
  const locked = yield* lockReachable(environmentId)
  if (locked.legacy_rp_id === null || locked.legacy_rp_disabled_at !== null) {
    return yield* new NoLegacyRpId({ detail: "This Environment has no legacy RP ID to disable" })
  }
  if (confirmRpId !== locked.legacy_rp_id) {
    return yield* new InvalidRequest({ detail: "confirm_rp_id must equal the legacy RP ID" })
  }
  const now = new Date(yield* Clock.currentTimeMillis)
  if (!(yield* repo.disableLegacyRp(caller.workspaceId, environmentId, locked.legacy_rp_id, now).pipe(Effect.orDie))) {
    return yield* new NoLegacyRpId({ detail: "This Environment has no legacy RP ID to disable" })
  }
  yield* audit.append({
    workspaceId: caller.workspaceId,
    environmentId,
    actor: caller.actor,
    action: "environment.legacy_rp_disabled",
    subjectType: "environment",
    subjectId: environmentId,
    details: { legacy_rp_id: locked.legacy_rp_id },
  })
  const env = yield* reload(environmentId)
  return rpMigrationOf(env, activeRpIdOf(env))
})
