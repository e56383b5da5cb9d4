import { Effect, Schema } from "effect"
import { NotFound } from "../../http/errors.js"
import { decodeParams, json, route } from "../../http/route.js"
import { CurrentCaller } from "../auth/caller.js"
import { withCaller } from "../auth/service.js"
import * as repo from "./repo.js"

const WorkspaceParams = Schema.Struct({ workspaceId: Schema.String })

export const Workspace = Schema.Struct({
  id: Schema.String, name: Schema.String, slug: Schema.String, status: Schema.String,
  created_at: Schema.String, updated_at: Schema.String,
})

const present = (row: repo.WorkspaceRow) => ({
  id: row.id, name: row.name, slug: row.slug, status: row.status,
  created_at: row.created_at.toISOString(), updated_at: row.updated_at.toISOString(),
})

export const workspaceRoutes = [
  route("GET", "/v1/workspaces/:workspaceId", withCaller("workspaces:read", Effect.gen(function* () {
    const { workspaceId } = yield* decodeParams(WorkspaceParams)
    const caller = yield* CurrentCaller
    // A caller never learns whether another Workspace exists.
    if (workspaceId !== caller.workspaceId) return yield* new NotFound({ detail: "Workspace not found" })
    const row = yield* repo.workspaceById(workspaceId).pipe(Effect.orDie)
    if (!row) return yield* new NotFound({ detail: "Workspace not found" })
    return json(present(row))
  })), { summary: "Get a Workspace", tags: ["Workspaces"], scope: "workspaces:read", params: WorkspaceParams, response: Workspace }),
]
