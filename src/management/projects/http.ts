import { Effect } from "effect"
import { decodeJsonBody, decodeParams, decodeQuery, json, route } from "../../http/route.js"
import { Tenancy } from "../../tenancy/service.js"
import { withCaller } from "../auth/service.js"
import { withEtag } from "../http/etag.js"
import { pageOf, parsePage } from "../http/pagination.js"
import { withIdempotency } from "../http/idempotency.js"
import type { ProjectRow } from "./repo.js"
import { CreateProjectBody, DeletedProject, ListProjectsQuery, Project, ProjectList, ProjectParams, UpdateProjectBody } from "./schema.js"
import * as service from "./service.js"

const present = (row: ProjectRow) => ({
  id: row.id, workspace_id: row.workspace_id, name: row.name, slug: row.slug,
  created_at: row.created_at.toISOString(), updated_at: row.updated_at.toISOString(),
})

const one = (row: ProjectRow, status = 200) => withEtag(json(present(row), status), row.id, row.version)

const tags = ["Projects"]

export const projectRoutes = [
  route("GET", "/v1/projects", withCaller("projects:read", Effect.gen(function* () {
    const query = yield* decodeQuery(ListProjectsQuery)
    const page = yield* parsePage(query)
    const rows = yield* service.listProjects(query.workspace_id, page)
    return json(pageOf(rows, page, (r) => r.id, present))
  })), { summary: "List the Projects of a Workspace", tags, scope: "projects:read", query: ListProjectsQuery, response: ProjectList }),

  route("POST", "/v1/projects", withCaller("projects:write", withIdempotency(Effect.gen(function* () {
    const body = yield* decodeJsonBody(CreateProjectBody)
    return one(yield* service.createProject(body), 201)
  }))), {
    summary: "Create a Project", tags, scope: "projects:write", body: CreateProjectBody, response: Project, status: 201, idempotent: true,
  }),

  route("GET", "/v1/projects/:projectId", withCaller("projects:read", Effect.gen(function* () {
    const { projectId } = yield* decodeParams(ProjectParams)
    return one(yield* service.reachableProject(projectId))
  })), { summary: "Get a Project", tags, scope: "projects:read", params: ProjectParams, response: Project }),

  route("PATCH", "/v1/projects/:projectId", withCaller("projects:write", withIdempotency(Effect.gen(function* () {
    const { projectId } = yield* decodeParams(ProjectParams)
    const body = yield* decodeJsonBody(UpdateProjectBody)
    return one(yield* service.updateProject(projectId, body))
  }))), {
    summary: "Update a Project's name and/or slug (If-Match supported)", tags, scope: "projects:write",
    params: ProjectParams, body: UpdateProjectBody, response: Project, idempotent: true,
  }),

  route("DELETE", "/v1/projects/:projectId", withCaller("projects:write", Effect.gen(function* () {
    const { projectId } = yield* decodeParams(ProjectParams)
    const tenancy = yield* Tenancy
    let deletedEnvironments: ReadonlyArray<string> = []
    const response = yield* withIdempotency(Effect.gen(function* () {
      deletedEnvironments = yield* service.deleteProject(projectId)
      return json({ id: projectId, deleted: true as const })
    }))
    // After the commit: this replica stops serving the deleted Environments at once.
    for (const id of deletedEnvironments) tenancy.forgetEnvironment(id)
    return response
  })), {
    summary: "Delete a Project (logical; its Environments are deleted with it; If-Match supported)", tags, scope: "projects:write",
    params: ProjectParams, response: DeletedProject, idempotent: true,
  }),
]
