import { Schema } from "effect"
import { PageQuery } from "../conventions/pagination.js"
import { Name, Slug } from "../workspaces/slug.js"

export const ProjectParams = Schema.Struct({ projectId: Schema.String })

export const Project = Schema.Struct({
  id: Schema.String,
  workspace_id: Schema.String,
  name: Schema.String,
  slug: Schema.String,
  created_at: Schema.String,
  updated_at: Schema.String,
})

export const ProjectList = Schema.Struct({ data: Schema.Array(Project), next_cursor: Schema.NullOr(Schema.String) })

export const ListProjectsQuery = Schema.Struct({ workspace_id: Schema.String, ...PageQuery })

export const CreateProjectBody = Schema.Struct({
  workspace_id: Schema.String,
  name: Name,
  slug: Schema.optionalKey(Slug),
})

export const UpdateProjectBody = Schema.Struct({ name: Schema.optionalKey(Name), slug: Schema.optionalKey(Slug) })

export const DeletedProject = Schema.Struct({ id: Schema.String, deleted: Schema.Literal(true) })
