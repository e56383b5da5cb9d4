import { Effect } from "effect"
import { json } from "../../http/route.js"
import { endpoint } from "../conventions/endpoint.js"
import { withEtag } from "../conventions/etag.js"
import { pageOf, parsePage } from "../conventions/pagination.js"
import type { MemberRow, WorkspaceRow } from "./repo.js"
import {
  CreateWorkspaceBody,
  ListWorkspacesQuery,
  Member,
  MemberList,
  MembersQuery,
  UpdateWorkspaceBody,
  Workspace,
  WorkspaceList,
  WorkspaceParams,
} from "./schema.js"
import * as service from "./service.js"

export { Workspace }

const present = (row: WorkspaceRow) => ({
  id: row.id,
  name: row.name,
  slug: row.slug,
  status: row.status as "active" | "suspended",
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString(),
})

const presentMember = (row: MemberRow) => ({
  platform_user_id: row.platform_user_id,
  role: row.role as "owner" | "admin" | "member",
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString(),
})

const one = (row: WorkspaceRow, status = 200) => withEtag(json(present(row), status), row.id, row.version)

const tags = ["Workspaces"]

export const workspaceRoutes = [
  // A Dashboard session lists its user's Workspaces without choosing one (no X-Workspace-Id
  // needed); an API key needs workspaces:read and sees its own Workspace only.
  endpoint(
    {
      method: "GET",
      path: "/v1/workspaces",
      summary: "List Workspaces (API key: its own; Dashboard session: member Workspaces)",
      tags,
      scope: "workspaces:read",
      caller: { noWorkspace: true, scopeForApiKeysOnly: true },
      query: ListWorkspacesQuery,
      response: WorkspaceList,
    },
    ({ query }) =>
      Effect.gen(function* () {
        const page = yield* parsePage(query)
        const rows = yield* service.listWorkspaces({ ...page, status: query.status })
        return json(pageOf(rows, page, (r) => r.id, present))
      }),
  ),

  // Idempotency keys of Workspace creation belong to the Dashboard user (there is no
  // Workspace yet): one user's key can never replay another user's answer.
  endpoint(
    {
      method: "POST",
      path: "/v1/workspaces",
      summary: "Create a Workspace (Dashboard session only; the creator becomes Owner)",
      tags,
      caller: { dashboardOnly: true, noWorkspace: true },
      body: CreateWorkspaceBody,
      response: Workspace,
      status: 201,
      idempotent: "per-platform-user",
    },
    ({ body }) => Effect.map(service.createWorkspace(body), (row) => one(row, 201)),
  ),

  endpoint(
    {
      method: "GET",
      path: "/v1/workspaces/:workspaceId",
      summary: "Get a Workspace",
      tags,
      scope: "workspaces:read",
      params: WorkspaceParams,
      response: Workspace,
    },
    ({ params }) => Effect.map(service.getWorkspace(params.workspaceId), (row) => one(row)),
  ),

  endpoint(
    {
      method: "PATCH",
      path: "/v1/workspaces/:workspaceId",
      summary: "Update a Workspace's name and/or slug (If-Match supported)",
      tags,
      scope: "workspaces:write",
      params: WorkspaceParams,
      readOnly: { status: "cannot be changed through the Management API" },
      body: UpdateWorkspaceBody,
      response: Workspace,
      idempotent: true,
      ifMatch: { resource: (p) => p.workspaceId },
    },
    ({ params, body, expectedVersion }) =>
      Effect.map(service.updateWorkspace(params.workspaceId, body, expectedVersion), (row) => one(row)),
  ),

  endpoint(
    {
      method: "GET",
      path: "/v1/workspaces/:workspaceId/members",
      summary: "List the members of a Workspace",
      tags,
      scope: "workspace_members:read",
      params: WorkspaceParams,
      query: MembersQuery,
      response: MemberList,
    },
    ({ params, query }) =>
      Effect.gen(function* () {
        const page = yield* parsePage(query)
        const rows = yield* service.listMembers(params.workspaceId, page)
        return json(pageOf(rows, page, (r) => r.platform_user_id, presentMember))
      }),
  ),
]

export { Member }
