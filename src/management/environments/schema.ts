import { Schema } from "effect"
import { PageQuery } from "../conventions/pagination.js"
import { Name } from "../workspaces/slug.js"

export const EnvironmentParams = Schema.Struct({ environmentId: Schema.String })

export const EnvironmentType = Schema.Literals(["test", "production"])
export const EnvironmentStatus = Schema.Literals(["active", "suspended", "deleted"])

/** `issuer`, `interaction_domain` and `rp_id` are derived and read-only (spec: Environment). */
export const Environment = Schema.Struct({
  id: Schema.String,
  workspace_id: Schema.String,
  project_id: Schema.String,
  type: EnvironmentType,
  name: Schema.String,
  status: EnvironmentStatus,
  issuer: Schema.String,
  interaction_domain: Schema.String,
  rp_id: Schema.String,
  created_at: Schema.String,
  updated_at: Schema.String,
})

export const EnvironmentList = Schema.Struct({
  data: Schema.Array(Environment),
  next_cursor: Schema.NullOr(Schema.String),
})

/** Optional here; when sent it must equal the authenticated Workspace (spec: common rule 5). */
const WorkspaceId = Schema.optionalKey(Schema.String)

export const ListEnvironmentsQuery = Schema.Struct({
  project_id: Schema.String,
  type: Schema.optionalKey(EnvironmentType),
  workspace_id: WorkspaceId,
  ...PageQuery,
})

export const CreateEnvironmentBody = Schema.Struct({
  project_id: Schema.String,
  type: EnvironmentType,
  name: Name,
  workspace_id: WorkspaceId,
})

/** `deleted` is reached only through DELETE (spec: Environment status). */
export const UpdateEnvironmentBody = Schema.Struct({
  name: Schema.optionalKey(Name),
  status: Schema.optionalKey(Schema.Literals(["active", "suspended"])),
})

export const Settings = Schema.Struct({
  impersonation_enabled: Schema.Boolean,
  /** The gate behind 403 `new_user_creation_blocked`: sign-ups of new users are refused. */
  new_user_creation_blocked: Schema.Boolean,
})

export const UpdateSettingsBody = Schema.Struct({
  impersonation_enabled: Schema.optionalKey(Schema.Boolean),
  new_user_creation_blocked: Schema.optionalKey(Schema.Boolean),
})

export const RpMigration = Schema.Struct({
  environment_id: Schema.String,
  /** The RP ID new passkeys are registered for. */
  active_rp_id: Schema.String,
  /** The previous RP ID, accepted for sign-in until disabled; null when there never was one. */
  legacy_rp_id: Schema.NullOr(Schema.String),
  /** `not_started`: no legacy RP ID; `in_progress`: legacy still accepted; `completed`: legacy disabled. */
  status: Schema.Literals(["not_started", "in_progress", "completed"]),
  legacy_disabled_at: Schema.NullOr(Schema.String),
})

export const DisableLegacyBody = Schema.Struct({ confirm_rp_id: Schema.String })
