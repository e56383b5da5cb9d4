import { Schema } from "effect"
import { PageQuery } from "../conventions/pagination.js"

// The wire of the Domains routes (spec: Resources "Domain", Management API "Domains").

export const DomainStatus = Schema.Literals(["pending", "active", "failed"])

export const CreateDomainBody = Schema.Struct({
  environment_id: Schema.String,
  workspace_id: Schema.optionalKey(Schema.String),
  hostname: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(253)),
  rp_enabled: Schema.optionalKey(Schema.Boolean),
})
export type CreateDomainBody = typeof CreateDomainBody.Type

export const UpdateDomainBody = Schema.Struct({ rp_enabled: Schema.Boolean })

export const DomainParams = Schema.Struct({ domainId: Schema.String })

export const ListDomainsQuery = Schema.Struct({
  environment_id: Schema.String,
  workspace_id: Schema.optionalKey(Schema.String),
  status: Schema.optionalKey(DomainStatus),
  ...PageQuery,
})

/** The DNS record that proves control of the hostname. */
export const DomainVerification = Schema.Struct({
  type: Schema.Literal("TXT"),
  name: Schema.String,
  value: Schema.String,
})

export const Domain = Schema.Struct({
  id: Schema.String,
  environment_id: Schema.String,
  hostname: Schema.String,
  rp_enabled: Schema.Boolean,
  status: DomainStatus,
  validation_errors: Schema.Array(Schema.String),
  verification: DomainVerification,
  created_at: Schema.String,
  updated_at: Schema.String,
})

export const DomainList = Schema.Struct({ data: Schema.Array(Domain), next_cursor: Schema.NullOr(Schema.String) })

export const Deleted = Schema.Struct({ id: Schema.String, deleted: Schema.Boolean })
