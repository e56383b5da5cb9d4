/** Every Management API scope of the spec (Authentication, rule 5). `:write` never implies `:read`. */
export const SCOPES = [
  "workspaces:read", "workspaces:write", "workspace_members:read", "projects:read", "projects:write",
  "environments:read", "environments:write", "clients:read", "clients:write", "clients:rotate_secret",
  "connections:read", "connections:write", "domains:read", "domains:write", "users:read", "users:write",
  "users:block", "users:delete", "user_identities:read", "user_identities:write", "user_passkeys:read",
  "user_passkeys:write", "user_sessions:read", "user_sessions:write", "user_data_jobs:read", "user_data_jobs:write",
  "webhooks:read", "webhooks:write", "webhooks:rotate_secret", "webhooks:test", "audit_events:read", "usage:read",
  "introspect", "billing:read", "billing:write", "api_keys:read", "api_keys:write", "impersonation:create",
] as const

export type Scope = (typeof SCOPES)[number]
