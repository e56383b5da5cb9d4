import { Clock, Effect } from "effect"
import { Forbidden, InvalidRequest, NotFound } from "../../http/errors.js"
import { Audit } from "../../platform/audit.js"
import { Tenancy, slugify } from "../../tenancy/service.js"
import { CurrentCaller } from "../auth/caller.js"
import { type ExpectedVersion, matchVersion } from "../conventions/etag.js"
import type { Page } from "../conventions/pagination.js"
import * as repo from "./repo.js"
import { lockSlug, SlugTaken } from "./slug.js"

const notFound = () => new NotFound({ detail: "Workspace not found" })

/**
 * Lists the Workspaces the caller may see: an API key its own Workspace only, a Dashboard
 * session every Workspace its user is a member of (spec: GET /workspaces).
 */
export const listWorkspaces = Effect.fnUntraced(
  function* (filter: { status?: string | undefined } & Page) {
    const caller = yield* CurrentCaller
    const query = { status: filter.status, after: filter.after, limit: filter.limit }
    return caller.kind === "dashboard"
      ? yield* repo.workspacesOfMember(caller.platformUserId!, query)
      : yield* repo.workspacesByIds([caller.workspaceId], query)
  },
  Effect.catchTag("SqlError", Effect.die),
)

/** A caller reaches only its own Workspace; any other id is 404, as if it did not exist. */
export const getWorkspace = Effect.fnUntraced(function* (workspaceId: string) {
  const caller = yield* CurrentCaller
  if (workspaceId !== caller.workspaceId) return yield* notFound()
  const row = yield* repo.workspaceById(workspaceId).pipe(Effect.orDie)
  return row ?? (yield* notFound())
})

/** Creates a Workspace; the Dashboard user who creates it becomes its Owner. */
export const createWorkspace = Effect.fnUntraced(
  function* (input: { name: string; slug?: string | undefined }) {
    const caller = yield* CurrentCaller
    const tenancy = yield* Tenancy
    const audit = yield* Audit
    // An explicit slug must be free; a derived one is made unique by Tenancy. Both are
    // checked under a lock on the slug, so concurrent creations cannot collide.
    const base = input.slug ?? slugify(input.name)
    yield* lockSlug("workspace", base)
    if (input.slug !== undefined && (yield* repo.slugUsedByOther(input.slug, null))) {
      return yield* new SlugTaken({ detail: `The slug ${input.slug} is already used by another Workspace` })
    }
    const created = yield* tenancy.createWorkspace(input)
    const now = new Date(yield* Clock.currentTimeMillis)
    yield* repo.insertOwner(created.id, caller.platformUserId!, now)
    yield* audit.append({
      workspaceId: created.id,
      actor: caller.actor,
      action: "workspace.created",
      subjectType: "workspace",
      subjectId: created.id,
      details: { name: input.name, slug: created.slug },
    })
    const row = yield* repo.workspaceById(created.id)
    return row!
  },
  Effect.catchTag("SqlError", Effect.die),
)

/** Renames a Workspace or changes its slug; `status` cannot change here (spec). */
export const updateWorkspace = Effect.fnUntraced(
  function* (
    workspaceId: string,
    change: { name?: string | undefined; slug?: string | undefined },
    expectedVersion: ExpectedVersion,
  ) {
    const caller = yield* CurrentCaller
    const audit = yield* Audit
    if (workspaceId !== caller.workspaceId) return yield* notFound()
    // Workspace-level changes are outside an Environment-pinned key's reach (docs/decisions/management-api.md).
    if (caller.environmentId !== null) {
      return yield* new Forbidden({ detail: "An Environment-pinned API key cannot change its Workspace" })
    }
    if (change.name === undefined && change.slug === undefined) {
      return yield* new InvalidRequest({ detail: "Send name and/or slug" })
    }
    if (change.slug !== undefined) yield* lockSlug("workspace", change.slug)
    const current = yield* repo.workspaceForUpdate(workspaceId)
    if (!current) return yield* notFound()
    yield* matchVersion(expectedVersion, current.version)
    if (change.slug !== undefined && (yield* repo.slugUsedByOther(change.slug, workspaceId))) {
      return yield* new SlugTaken({ detail: `The slug ${change.slug} is already used by another Workspace` })
    }
    const now = new Date(yield* Clock.currentTimeMillis)
    const updated = yield* repo.updateWorkspace(workspaceId, current.version, { ...change, now })
    if (!updated) return yield* notFound()
    yield* audit.append({
      workspaceId,
      actor: caller.actor,
      action: "workspace.updated",
      subjectType: "workspace",
      subjectId: workspaceId,
      details: { changed_fields: Object.keys(change).filter((k) => change[k as keyof typeof change] !== undefined) },
    })
    return updated
  },
  Effect.catchTag("SqlError", Effect.die),
)

export const listMembers = Effect.fnUntraced(function* (workspaceId: string, page: Page) {
  const caller = yield* CurrentCaller
  if (workspaceId !== caller.workspaceId) return yield* notFound()
  return yield* repo.membersPage(workspaceId, page).pipe(Effect.orDie)
})
