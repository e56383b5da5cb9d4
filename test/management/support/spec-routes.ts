/**
 * Every Management API route of the spec's tables ("Management API"), as
 * `METHOD /v1/path` with path parameters written `{name}` (names are not compared).
 */
export const CORE_ROUTES = [
  // API keys
  "GET /v1/api-keys",
  "POST /v1/api-keys",
  "POST /v1/api-keys/{apiKeyId}/revoke",
  // Workspaces and members
  "GET /v1/workspaces",
  "POST /v1/workspaces",
  "GET /v1/workspaces/{workspaceId}",
  "PATCH /v1/workspaces/{workspaceId}",
  "GET /v1/workspaces/{workspaceId}/members",
  // Projects
  "GET /v1/projects",
  "POST /v1/projects",
  "GET /v1/projects/{projectId}",
  "PATCH /v1/projects/{projectId}",
  "DELETE /v1/projects/{projectId}",
  // Environments
  "GET /v1/environments",
  "POST /v1/environments",
  "GET /v1/environments/{environmentId}",
  "PATCH /v1/environments/{environmentId}",
  "DELETE /v1/environments/{environmentId}",
  "GET /v1/environments/{environmentId}/settings",
  "PATCH /v1/environments/{environmentId}/settings",
  "GET /v1/environments/{environmentId}/theme",
  "PUT /v1/environments/{environmentId}/theme",
  "GET /v1/environments/{environmentId}/theme/preview-css",
  "GET /v1/environments/{environmentId}/rp-migration",
  "POST /v1/environments/{environmentId}/rp-migration/disable-legacy",
] as const

export const OTHER_ROUTES = [
  // Clients
  "GET /v1/clients",
  "POST /v1/clients",
  "GET /v1/clients/{clientId}",
  "PATCH /v1/clients/{clientId}",
  "DELETE /v1/clients/{clientId}",
  "POST /v1/clients/{clientId}/rotate-secret",
  // Connections
  "GET /v1/connections",
  "POST /v1/connections",
  "PATCH /v1/connections/{connectionId}",
  "DELETE /v1/connections/{connectionId}",
  // Domains
  "GET /v1/domains",
  "POST /v1/domains",
  "GET /v1/domains/{domainId}",
  "PATCH /v1/domains/{domainId}",
  "DELETE /v1/domains/{domainId}",
  "POST /v1/domains/{domainId}/retry-validation",
  // Users
  "GET /v1/users",
  "POST /v1/users",
  "GET /v1/users/{userId}",
  "PATCH /v1/users/{userId}",
  "DELETE /v1/users/{userId}",
  "POST /v1/users/{userId}/block",
  "POST /v1/users/{userId}/unblock",
  "GET /v1/users/{userId}/identities",
  "DELETE /v1/users/{userId}/identities/{identityId}",
  "GET /v1/users/{userId}/passkeys",
  "DELETE /v1/users/{userId}/passkeys/{passkeyId}",
  "GET /v1/users/{userId}/sessions",
  "DELETE /v1/users/{userId}/sessions/{sessionId}",
  "DELETE /v1/users/{userId}/sessions",
  // Import / export jobs
  "POST /v1/user-import-jobs",
  "GET /v1/user-import-jobs/{jobId}",
  "GET /v1/user-import-jobs/{jobId}/errors",
  "POST /v1/user-export-jobs",
  "GET /v1/user-export-jobs/{jobId}",
  "GET /v1/user-export-jobs/{jobId}/download",
  // Webhooks
  "GET /v1/webhooks",
  "POST /v1/webhooks",
  "PATCH /v1/webhooks/{webhookId}",
  "DELETE /v1/webhooks/{webhookId}",
  "POST /v1/webhooks/{webhookId}/rotate-secret",
  "POST /v1/webhooks/{webhookId}/test",
  "GET /v1/webhooks/{webhookId}/deliveries",
  // Other Management routes
  "GET /v1/audit-events",
  "GET /v1/usage/mau",
  "POST /v1/billing/checkout-session",
  "POST /v1/billing/portal-session",
  "POST /v1/impersonation",
  "POST /v1/impersonation/stop",
] as const

export const SPEC_MANAGEMENT_ROUTES = [...CORE_ROUTES, ...OTHER_ROUTES] as const

/** `GET /v1/users/{id}` -> `GET /v1/users/{}`: parameter names do not matter. */
export const normalize = (route: string) => route.replace(/\{[^}]+\}/g, "{}").replace(/:[A-Za-z_]\w*/g, "{}")

/** The `METHOD path` pairs of an OpenAPI document, normalized. */
export const documentedRoutes = (doc: { paths: Record<string, Record<string, unknown>> }) =>
  new Set(
    Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((method) => normalize(`${method.toUpperCase()} ${path}`)),
    ),
  )
