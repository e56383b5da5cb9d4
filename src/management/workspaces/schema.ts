import { Schema } from "effect"
import { PageQuery } from "../conventions/pagination.js"
import { Name, Slug } from "./slug.js"

export const WorkspaceParams = Schema.Struct({ workspaceId: Schema.String })

export const WorkspaceStatus = Schema.Literals(["active", "suspended"])

export const Workspace = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  slug: Schema.String,
  status: WorkspaceStatus,
  created_at: Schema.String,
  updated_at: Schema.String,
})

export const WorkspaceList = Schema.Struct({ data: Schema.Array(Workspace), next_cursor: Schema.NullOr(Schema.String) })

export const ListWorkspacesQuery = Schema.Struct({ ...PageQuery, status: Schema.optionalKey(WorkspaceStatus) })

export const CreateWorkspaceBody = Schema.Struct({ name: Name, slug: Schema.optionalKey(Slug) })

export const UpdateWorkspaceBody = Schema.Struct({ name: Schema.optionalKey(Name), slug: Schema.optionalKey(Slug) })

export const MembersQuery = Schema.Struct({ ...PageQuery })

/** A member is only these four fields (spec: Workspace, Project, Member). */
export const Member = Schema.Struct({
  platform_user_id: Schema.String,
  role: Schema.Literals(["owner", "admin", "member"]),
  created_at: Schema.String,
  updated_at: Schema.String,
})

export const MemberList = Schema.Struct({ data: Schema.Array(Member), next_cursor: Schema.NullOr(Schema.String) })
