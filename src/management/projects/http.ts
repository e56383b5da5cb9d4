import { Effect } from "effect"
import { json } from "../../http/route.js"
import { Tenancy } from "../../tenancy/service.js"
import { endpoint } from "../conventions/endpoint.js"
import { withEtag } from "../conventions/etag.js"
import { pageOf, parsePage } from "../conventions/pagination.js"
import type { ProjectRow } from "./repo.js"
import {
  CreateProjectBody,
  DeletedProject,
  ListProjectsQuery,
  Project,
  ProjectList,
  ProjectParams,
  UpdateProjectBody,
} from "./schema.js"
import * as service from "./service.js"

const present = (row: ProjectRow) => ({
  id: row.id,
  workspace_id: row.workspace_id,
  name: row.name,
  slug: row.slug,
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString(),
})

const one = (row: ProjectRow, status = 200) => withEtag(json(present(row), status), row.id, row.version)

const tags = ["Projects"]

export const projectRoutes = [
  endpoint(
    {
      method: "GET",
      path: "/v1/projects",
      summary: "List the Projects of a Workspace",
      tags,
      scope: "projects:read",
      query: ListProjectsQuery,
      response: ProjectList,
    },
    ({ query }) =>
      Effect.gen(function* () {
        const page = yield* parsePage(query)
        const rows = yield* service.listProjects(query.workspace_id, page)
        return json(pageOf(rows, page, (r) => r.id, present))
      }),
  ),

  endpoint(
    {
      method: "POST",
      path: "/v1/projects",
      summary: "Create a Project",
      tags,
      scope: "projects:write",
      body: CreateProjectBody,
      response: Project,
      status: 201,
      idempotent: true,
    },
    ({ body }) => Effect.map(service.createProject(body), (row) => one(row, 201)),
  ),

  endpoint(
    {
      method: "GET",
      path: "/v1/projects/:projectId",
      summary: "Get a Project",
      tags,
      scope: "projects:read",
      params: ProjectParams,
      response: Project,
    },
    ({ params }) => Effect.map(service.reachableProject(params.projectId), (row) => one(row)),
  ),

  endpoint(
    {
      method: "PATCH",
      path: "/v1/projects/:projectId",
      summary: "Update a Project's name and/or slug (If-Match supported)",
      tags,
      scope: "projects:write",
      params: ProjectParams,
      body: UpdateProjectBody,
      response: Project,
      idempotent: true,
      ifMatch: { resource: (p) => p.projectId },
    },
    ({ params, body, expectedVersion }) =>
      Effect.map(service.updateProject(params.projectId, body, expectedVersion), (row) => one(row)),
  ),

  endpoint(
    {
      method: "DELETE",
      path: "/v1/projects/:projectId",
      summary: "Delete a Project (logical; its Environments are deleted with it; If-Match supported)",
      tags,
      scope: "projects:write",
      params: ProjectParams,
      response: DeletedProject,
      idempotent: true,
      ifMatch: { resource: (p) => p.projectId },
    },
    ({ params, expectedVersion, afterCommit }) =>
      Effect.gen(function* () {
        const tenancy = yield* Tenancy
        const deletedEnvironments = yield* service.deleteProject(params.projectId, expectedVersion)
        // After the commit: this replica stops serving the deleted Environments at once.
        afterCommit(() => {
          for (const id of deletedEnvironments) tenancy.forgetEnvironment(id)
        })
        return json({ id: params.projectId, deleted: true as const })
      }),
  ),
]
