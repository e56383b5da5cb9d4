import { Effect } from "effect"
import { decodeJsonBody, decodeParams, decodeQuery, json, refuseBodyFields, route } from "../../http/route.js"
import { CurrentCaller } from "../auth/caller.js"
import { withCaller } from "../auth/service.js"
import { withEtag } from "../http/etag.js"
import { InsufficientScope } from "../../http/errors.js"
import { pageOf, parsePage } from "../http/pagination.js"
import { withIdempotency } from "../http/idempotency.js"
import type { MemberRow, WorkspaceRow } from "./repo.js"
import {
  CreateWorkspaceBody, ListWorkspacesQuery, Member, MemberList, MembersQuery, UpdateWorkspaceBody, Workspace, WorkspaceList,
  WorkspaceParams,
} from "./schema.js"
import * as service from "./service.js"

export { Workspace }

const present = (row: WorkspaceRow) => ({
  id: row.id, name: row.name, slug: row.slug, status: row.status as "active" | "suspended",
  created_at: row.created_at.toISOString(), updated_at: row.updated_at.toISOString(),
})

const presentMember = (row: MemberRow) => ({
  platform_user_id: row.platform_user_id, role: row.role as "owner" | "admin" | "member",
  created_at: row.created_at.toISOString(), updated_at: row.updated_at.toISOString(),
})

const one = (row: WorkspaceRow, status = 200) => withEtag(json(present(row), status), row.id, row.version)

const tags = ["Workspaces"]

export const workspaceRoutes = [
  // A Dashboard session lists its user's Workspaces without choosing one (no X-Workspace-Id
  // needed); an API key needs workspaces:read and sees its own Workspace only.
  route("GET", "/v1/workspaces", withCaller(undefined, Effect.gen(function* () {
    const caller = yield* CurrentCaller
    if (caller.kind === "api_key" && !caller.scopes.has("workspaces:read")) {
      return yield* new InsufficientScope({ required: "workspaces:read" })
    }
    const query = yield* decodeQuery(ListWorkspacesQuery)
    const page = yield* parsePage(query)
    const rows = yield* service.listWorkspaces({ ...page, status: query.status })
    return json(pageOf(rows, page, (r) => r.id, present))
  }), { noWorkspace: true }), {
    summary: "List Workspaces (API key: its own; Dashboard session: member Workspaces)", tags, scope: "workspaces:read",
    query: ListWorkspacesQuery, response: WorkspaceList,
  }),

  route("POST", "/v1/workspaces", withCaller(undefined, Effect.gen(function* () {
    const caller = yield* CurrentCaller
    // Idempotency keys of Workspace creation belong to the Dashboard user (there is no
    // Workspace yet): one user's key can never replay another user's answer.
    return yield* Effect.provideService(withIdempotency(Effect.gen(function* () {
      const body = yield* decodeJsonBody(CreateWorkspaceBody)
      const row = yield* Effect.provideService(service.createWorkspace(body), CurrentCaller, caller)
      return one(row, 201)
    })), CurrentCaller, { ...caller, workspaceId: `platform_user:${caller.platformUserId}` })
  }), { dashboardOnly: true, noWorkspace: true }), {
    summary: "Create a Workspace (Dashboard session only; the creator becomes Owner)", tags,
    body: CreateWorkspaceBody, response: Workspace, status: 201, idempotent: true,
  }),

  route("GET", "/v1/workspaces/:workspaceId", withCaller("workspaces:read", Effect.gen(function* () {
    const { workspaceId } = yield* decodeParams(WorkspaceParams)
    return one(yield* service.getWorkspace(workspaceId))
  })), { summary: "Get a Workspace", tags, scope: "workspaces:read", params: WorkspaceParams, response: Workspace }),

  route("PATCH", "/v1/workspaces/:workspaceId", withCaller("workspaces:write", withIdempotency(Effect.gen(function* () {
    const { workspaceId } = yield* decodeParams(WorkspaceParams)
    yield* refuseBodyFields({ status: "cannot be changed through the Management API" })
    const body = yield* decodeJsonBody(UpdateWorkspaceBody)
    return one(yield* service.updateWorkspace(workspaceId, body))
  }))), {
    summary: "Update a Workspace's name and/or slug (If-Match supported)", tags, scope: "workspaces:write",
    params: WorkspaceParams, body: UpdateWorkspaceBody, response: Workspace, idempotent: true,
  }),

  route("GET", "/v1/workspaces/:workspaceId/members", withCaller("workspace_members:read", Effect.gen(function* () {
    const { workspaceId } = yield* decodeParams(WorkspaceParams)
    const page = yield* parsePage(yield* decodeQuery(MembersQuery))
    const rows = yield* service.listMembers(workspaceId, page)
    return json(pageOf(rows, page, (r) => r.platform_user_id, presentMember))
  })), {
    summary: "List the members of a Workspace", tags, scope: "workspace_members:read",
    params: WorkspaceParams, query: MembersQuery, response: MemberList,
  }),
]

export { Member }
