import { Schema } from "effect"
import { PageQuery } from "../conventions/pagination.js"
import { SCOPES } from "../../tenancy/scopes.js"
import { Name } from "../workspaces/slug.js"

export const ApiKeyParams = Schema.Struct({ apiKeyId: Schema.String })

export const ListApiKeysQuery = Schema.Struct({
  workspace_id: Schema.String,
  environment_id: Schema.optionalKey(Schema.String),
  ...PageQuery,
})

/** RFC 3339 date-time with an explicit offset (`Z` or `±hh:mm`). */
const DateTime = Schema.String.check(
  Schema.makeFilter(
    (value: string) =>
      /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/.test(value) &&
      !Number.isNaN(Date.parse(value))
        ? undefined
        : "must be an RFC 3339 date-time such as 2030-01-31T00:00:00Z",
    { description: "RFC 3339 date-time" },
  ),
)

export const Scope = Schema.Literals(SCOPES)

export const CreateApiKeyBody = Schema.Struct({
  workspace_id: Schema.String,
  name: Name,
  /** At least one scope of the spec's list (Authentication rule 5). */
  scopes: Schema.Array(Scope).check(Schema.isMinLength(1)),
  /** Pins the key to one Environment of the Workspace; omitted or null: Workspace-scoped. */
  environment_id: Schema.optionalKey(Schema.NullOr(Schema.String)),
  /** Must be in the future; omitted or null: the key never expires. */
  expires_at: Schema.optionalKey(Schema.NullOr(DateTime)),
})

/** Never carries the secret (spec: list never returns secrets). */
export const ApiKey = Schema.Struct({
  id: Schema.String,
  workspace_id: Schema.String,
  environment_id: Schema.NullOr(Schema.String),
  name: Schema.String,
  scopes: Schema.Array(Schema.String),
  expires_at: Schema.NullOr(Schema.String),
  /** `active`, `revoked`, or `expired` (derived from `revoked_at` and `expires_at`). */
  status: Schema.Literals(["active", "revoked", "expired"]),
  revoked_at: Schema.NullOr(Schema.String),
  created_at: Schema.String,
})

/** The creation answer: the only time the secret (`sk_live_...`) is shown. */
export const CreatedApiKey = Schema.Struct({ ...ApiKey.fields, secret: Schema.String })

export const ApiKeyList = Schema.Struct({ data: Schema.Array(ApiKey), next_cursor: Schema.NullOr(Schema.String) })
