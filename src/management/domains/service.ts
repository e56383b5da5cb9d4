import { Clock, Effect } from "effect"
import { InvalidRequest, NotFound } from "../../http/errors.js"
import { Audit } from "../../platform/audit.js"
import { Config } from "../../platform/config.js"
import { Crypto } from "../../platform/crypto.js"
import { Ids } from "../../platform/ids.js"
import { Tenancy } from "../../tenancy/service.js"
import { defaultInteractionHost } from "../../tenancy/urls.js"
import { environmentForCaller } from "../auth/access.js"
import { CurrentCaller } from "../auth/caller.js"
import { requireWorkspaceMatch } from "../auth/service.js"
import { type ExpectedVersion, matchVersion } from "../conventions/etag.js"
import type { Page } from "../conventions/pagination.js"
import { DomainAlreadyExists } from "./errors.js"
import { hostnameProblem } from "./hostname.js"
import * as repo from "./repo.js"
import { nextRpState, type RpState } from "../../tenancy/rp-migration.js"
import type { CreateDomainBody } from "./schema.js"
import { validationErrors } from "./validation.js"

const notFound = () => new NotFound({ detail: "Domain not found" })

/** A domain the caller may reach (its Workspace, a reachable Environment); else 404. */
const reachable = Effect.fnUntraced(function* (id: string) {
  const caller = yield* CurrentCaller
  const row = yield* repo.domainInWorkspace(caller.workspaceId, id, { lock: false }).pipe(Effect.orDie)
  if (!row) return yield* notFound()
  const env = yield* environmentForCaller(row.environment_id).pipe(Effect.mapError(notFound))
  return { row, env }
})

/** The same domain re-read under its row lock (taken after the Environment's: one lock order). */
const lockDomain = Effect.fnUntraced(function* (id: string) {
  const caller = yield* CurrentCaller
  const row = yield* repo.domainInWorkspace(caller.workspaceId, id, { lock: true }).pipe(Effect.orDie)
  if (!row) return yield* notFound()
  return row
})

/**
 * Runs a domain change with the Environment row locked, then moves THE Interaction Domain's
 * RP ID if the change moved the Interaction Domain (activation, `rp_enabled`, deletion), in
 * the same transaction. The old RP ID becomes the legacy one (see ./rp.ts).
 */
const withRpFollowing = Effect.fnUntraced(function* <A, E, R>(environmentId: string, change: Effect.Effect<A, E, R>) {
  const config = yield* Config
  const tenancy = yield* Tenancy
  const caller = yield* CurrentCaller
  const audit = yield* Audit
  const env = yield* repo.lockEnvironmentRp(environmentId).pipe(Effect.orDie)
  if (!env) return yield* notFound()
  const defaultHost = defaultInteractionHost(config, environmentId)
  const hostBefore = (yield* repo.interactionCustomHost(environmentId).pipe(Effect.orDie)) ?? defaultHost
  const before: RpState = {
    activeRpId: env.active_rp_id ?? hostBefore,
    legacyRpId: env.legacy_rp_id,
    legacyRpDisabledAt: env.legacy_rp_disabled_at,
  }
  const result = yield* change
  const hostAfter = (yield* repo.interactionCustomHost(environmentId).pipe(Effect.orDie)) ?? defaultHost
  const stillServed =
    before.activeRpId === defaultHost ||
    (yield* repo.activeDomainHost(environmentId, before.activeRpId).pipe(Effect.orDie))
  const next = nextRpState(before, hostAfter, stillServed)
  if (next) {
    const now = new Date(yield* Clock.currentTimeMillis)
    yield* repo.setEnvironmentRp(environmentId, { ...next, now }).pipe(Effect.orDie)
    const workspaceId = caller.workspaceId
    yield* audit.append({
      workspaceId,
      environmentId,
      actor: caller.actor,
      action: "environment.rp_id_changed",
      subjectType: "environment",
      subjectId: environmentId,
      details: {
        interaction_domain: hostAfter,
        active_rp_id: next.activeRpId,
        legacy_rp_id: next.legacyRpId,
        previous_rp_id: before.activeRpId,
      },
    })
  }
  tenancy.forgetEnvironment(environmentId)
  return result
})

export const getDomain = (id: string) => Effect.map(reachable(id), ({ row }) => row)

export const listDomains = Effect.fnUntraced(function* (
  query: { environment_id: string; workspace_id?: string | undefined; status?: string | undefined },
  page: Page,
) {
  yield* requireWorkspaceMatch(query.workspace_id)
  const env = yield* environmentForCaller(query.environment_id)
  return yield* repo.domainsPage(env.id, { status: query.status }, page).pipe(Effect.orDie)
})

/** Registers a hostname in status `pending` with a fresh verification token (spec: Domain). */
export const createDomain = Effect.fnUntraced(function* (body: CreateDomainBody) {
  const caller = yield* CurrentCaller
  const audit = yield* Audit
  const ids = yield* Ids
  const crypto = yield* Crypto
  const config = yield* Config
  yield* requireWorkspaceMatch(body.workspace_id)
  const env = yield* environmentForCaller(body.environment_id)
  const problem = hostnameProblem(config, body.hostname)
  if (problem !== undefined) return yield* new InvalidRequest({ detail: `hostname ${problem}` })
  yield* repo.lockHostname(body.hostname).pipe(Effect.orDie)
  if (yield* repo.hostnameTaken(env.workspaceId, body.hostname).pipe(Effect.orDie)) {
    return yield* new DomainAlreadyExists({
      detail: `${body.hostname} is already active as a custom domain or claimed by this Workspace`,
    })
  }
  const id = yield* ids.make("dom")
  const now = new Date(yield* Clock.currentTimeMillis)
  const row = yield* repo
    .insertDomain({
      id,
      workspaceId: env.workspaceId,
      environmentId: env.id,
      hostname: body.hostname,
      rpEnabled: body.rp_enabled ?? false,
      verificationToken: `authservice-verification=${yield* crypto.randomToken(32)}`,
      now,
    })
    .pipe(Effect.orDie)
  yield* audit.append({
    workspaceId: env.workspaceId,
    environmentId: env.id,
    actor: caller.actor,
    action: "domain.created",
    subjectType: "domain",
    subjectId: id,
    details: { hostname: row.hostname, rp_enabled: row.rp_enabled },
  })
  return row
})

export const updateDomain = Effect.fnUntraced(function* (
  id: string,
  patch: { readonly rp_enabled: boolean },
  expectedVersion: ExpectedVersion,
) {
  const caller = yield* CurrentCaller
  const audit = yield* Audit
  const { env } = yield* reachable(id)
  return yield* withRpFollowing(
    env.id,
    Effect.gen(function* () {
      const current = yield* lockDomain(id)
      yield* matchVersion(expectedVersion, current.version)
      const now = new Date(yield* Clock.currentTimeMillis)
      const updated = yield* repo.setRpEnabled(current.id, current.version, patch.rp_enabled, now).pipe(Effect.orDie)
      if (!updated) return yield* notFound()
      yield* audit.append({
        workspaceId: current.workspace_id,
        environmentId: current.environment_id,
        actor: caller.actor,
        action: "domain.updated",
        subjectType: "domain",
        subjectId: current.id,
        details: { changed_fields: ["rp_enabled"], rp_enabled: patch.rp_enabled },
      })
      return updated
    }),
  )
})

export const deleteDomain = Effect.fnUntraced(function* (id: string, expectedVersion: ExpectedVersion) {
  const caller = yield* CurrentCaller
  const audit = yield* Audit
  const { env } = yield* reachable(id)
  return yield* withRpFollowing(
    env.id,
    Effect.gen(function* () {
      const current = yield* lockDomain(id)
      yield* matchVersion(expectedVersion, current.version)
      if (!(yield* repo.deleteDomain(current.id, current.version).pipe(Effect.orDie))) return yield* notFound()
      yield* audit.append({
        workspaceId: current.workspace_id,
        environmentId: current.environment_id,
        actor: caller.actor,
        action: "domain.deleted",
        subjectType: "domain",
        subjectId: current.id,
        details: { hostname: current.hostname },
      })
      return { id: current.id, environmentId: current.environment_id }
    }),
  )
})

/**
 * Checks the DNS proof again and moves a `pending` or `failed` domain to `active` or `failed`
 * with its `validation_errors`. An `active` domain is answered as it is (nothing to retry).
 */
export const retryValidation = Effect.fnUntraced(function* (id: string, expectedVersion: ExpectedVersion) {
  const caller = yield* CurrentCaller
  const audit = yield* Audit
  const { row, env } = yield* reachable(id)
  if (row.status === "active") {
    yield* matchVersion(expectedVersion, row.version)
    return row
  }
  // The lookup runs before any lock is taken: DNS time never holds a row lock.
  let errors = yield* validationErrors(row)
  return yield* withRpFollowing(
    env.id,
    Effect.gen(function* () {
      const current = yield* lockDomain(id)
      yield* matchVersion(expectedVersion, current.version)
      // A concurrent retry already activated it: one activation, one RP move.
      if (current.status === "active") return current
      // Only the proof grants the hostname, and to one claim at a time: claims of other
      // Workspaces may coexist while pending (docs/decisions/security-hardening.md: no squatting), so activation takes the
      // hostname's lock and refuses while another claim holds it `active`.
      yield* repo.lockHostname(current.hostname).pipe(Effect.orDie)
      const inUse =
        errors.length === 0 && (yield* repo.hostnameActiveElsewhere(current.hostname, current.id).pipe(Effect.orDie))
      if (inUse)
        errors = [`${current.hostname} is already active as another custom domain; it must be deleted there first`]
      const now = new Date(yield* Clock.currentTimeMillis)
      const status = errors.length === 0 ? ("active" as const) : ("failed" as const)
      const updated = yield* repo
        .setValidationResult(current.id, current.version, { status, errors, now })
        .pipe(Effect.orDie)
      if (!updated) return yield* notFound()
      yield* audit.append({
        workspaceId: current.workspace_id,
        environmentId: current.environment_id,
        actor: caller.actor,
        action: status === "active" ? "domain.validated" : "domain.validation_failed",
        subjectType: "domain",
        subjectId: current.id,
        result: status === "active" ? "success" : "failure",
        details: { hostname: current.hostname, validation_errors: errors },
      })
      return updated
    }),
  )
})
