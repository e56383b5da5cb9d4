import { Clock, Effect } from "effect"
import { Forbidden, InvalidRequest, NotFound } from "../../http/errors.js"
import { Audit } from "../../platform/audit.js"
import { slugify, Tenancy } from "../../tenancy/service.js"
import { type Caller, CurrentCaller } from "../auth/caller.js"
import { requireWorkspaceMatch } from "../auth/service.js"
import { type ExpectedVersion, matchVersion } from "../conventions/etag.js"
import type { Page } from "../conventions/pagination.js"
import { lockSlug, SlugTaken } from "../workspaces/slug.js"
import * as repo from "./repo.js"

const notFound = () => new NotFound({ detail: "Project not found" })

/** Environment-pinned keys see only the Project of their Environment (docs/decisions/management-api.md). */
const pinnedProjectId = (caller: Caller) =>
  caller.environmentId === null
    ? Effect.succeed(undefined)
    : repo.projectIdOfEnvironment(caller.workspaceId, caller.environmentId)

const forbidPinned = (caller: Caller) =>
  caller.environmentId === null
    ? Effect.void
    : Effect.fail(new Forbidden({ detail: "An Environment-pinned API key cannot create, change or delete Projects" }))

/** The live Project `id` if the caller may reach it, else 404. */
export const reachableProject = Effect.fnUntraced(
  function* (projectId: string) {
    const caller = yield* CurrentCaller
    const row = yield* repo.projectById(caller.workspaceId, projectId)
    const pinned = yield* pinnedProjectId(caller)
    if (!row || (pinned !== undefined && pinned !== row.id)) return yield* notFound()
    return row
  },
  Effect.catchTag("SqlError", Effect.die),
)

export const listProjects = Effect.fnUntraced(
  function* (workspaceId: string, page: Page) {
    yield* requireWorkspaceMatch(workspaceId)
    const caller = yield* CurrentCaller
    const pinned = yield* pinnedProjectId(caller)
    if (caller.environmentId !== null && pinned === undefined) return []
    return yield* repo.projectsPage(caller.workspaceId, { ...page, onlyId: pinned })
  },
  Effect.catchTag("SqlError", Effect.die),
)

/** A free slug derived from the name: `base`, else `base-2`, `base-3`, ... */
const derivedSlug = Effect.fnUntraced(function* (workspaceId: string, name: string) {
  const base = slugify(name).slice(0, 44).replace(/-+$/, "") || "project"
  for (let n = 1; ; n++) {
    const slug = n === 1 ? base : `${base}-${n}`
    if (!(yield* repo.slugUsedByOther(workspaceId, slug, null))) return slug
  }
})

export const createProject = Effect.fnUntraced(
  function* (input: { workspace_id: string; name: string; slug?: string | undefined }) {
    yield* requireWorkspaceMatch(input.workspace_id)
    const caller = yield* CurrentCaller
    yield* forbidPinned(caller)
    const tenancy = yield* Tenancy
    const audit = yield* Audit
    // Slugs are unique per Workspace among live Projects; one lock per Workspace makes check + insert atomic.
    yield* lockSlug("project", caller.workspaceId)
    let slug = input.slug
    if (slug !== undefined && (yield* repo.slugUsedByOther(caller.workspaceId, slug, null))) {
      return yield* new SlugTaken({ detail: `The slug ${slug} is already used by another Project of this Workspace` })
    }
    slug ??= yield* derivedSlug(caller.workspaceId, input.name)
    const { id } = yield* tenancy.createProject({ workspaceId: caller.workspaceId, name: input.name, slug })
    yield* audit.append({
      workspaceId: caller.workspaceId,
      actor: caller.actor,
      action: "project.created",
      subjectType: "project",
      subjectId: id,
      details: { name: input.name, slug },
    })
    return (yield* repo.projectById(caller.workspaceId, id))!
  },
  Effect.catchTag("SqlError", Effect.die),
)

export const updateProject = Effect.fnUntraced(
  function* (
    projectId: string,
    change: { name?: string | undefined; slug?: string | undefined },
    expectedVersion: ExpectedVersion,
  ) {
    const caller = yield* CurrentCaller
    const audit = yield* Audit
    yield* reachableProject(projectId)
    yield* forbidPinned(caller)
    if (change.name === undefined && change.slug === undefined)
      return yield* new InvalidRequest({ detail: "Send name and/or slug" })
    if (change.slug !== undefined) yield* lockSlug("project", caller.workspaceId)
    const current = yield* repo.projectForUpdate(caller.workspaceId, projectId)
    if (!current) return yield* notFound()
    yield* matchVersion(expectedVersion, current.version)
    if (change.slug !== undefined && (yield* repo.slugUsedByOther(caller.workspaceId, change.slug, projectId))) {
      return yield* new SlugTaken({
        detail: `The slug ${change.slug} is already used by another Project of this Workspace`,
      })
    }
    const now = new Date(yield* Clock.currentTimeMillis)
    const updated = yield* repo.updateProject(caller.workspaceId, projectId, current.version, { ...change, now })
    if (!updated) return yield* notFound()
    yield* audit.append({
      workspaceId: caller.workspaceId,
      actor: caller.actor,
      action: "project.updated",
      subjectType: "project",
      subjectId: projectId,
      details: { changed_fields: Object.keys(change) },
    })
    return updated
  },
  Effect.catchTag("SqlError", Effect.die),
)

/**
 * Logical deletion (spec: returns `id` and `deleted` = true). The Project's Environments
 * are deleted with it (status `deleted`: they stop serving). Returns their ids so the
 * caller drops them from the Environment cache after the commit.
 */
export const deleteProject = Effect.fnUntraced(
  function* (projectId: string, expectedVersion: ExpectedVersion) {
    const caller = yield* CurrentCaller
    const audit = yield* Audit
    yield* reachableProject(projectId)
    yield* forbidPinned(caller)
    const current = yield* repo.projectForUpdate(caller.workspaceId, projectId)
    if (!current) return yield* notFound()
    yield* matchVersion(expectedVersion, current.version)
    const now = new Date(yield* Clock.currentTimeMillis)
    if (!(yield* repo.markProjectDeleted(caller.workspaceId, projectId, current.version, now))) return yield* notFound()
    const environmentIds = yield* repo.deleteEnvironmentsOfProject(caller.workspaceId, projectId, now)
    yield* audit.append({
      workspaceId: caller.workspaceId,
      actor: caller.actor,
      action: "project.deleted",
      subjectType: "project",
      subjectId: projectId,
      details: { deleted_environment_ids: environmentIds },
    })
    for (const environmentId of environmentIds) {
      yield* audit.append({
        workspaceId: caller.workspaceId,
        environmentId,
        actor: caller.actor,
        action: "environment.deleted",
        subjectType: "environment",
        subjectId: environmentId,
        details: { reason: "project_deleted" },
      })
    }
    return environmentIds
  },
  Effect.catchTag("SqlError", Effect.die),
)
