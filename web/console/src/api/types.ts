// Names for the generated Management API types (schema.d.ts, from the served OpenAPI document).
import type { paths } from "./schema"

type Method = "get" | "post" | "patch" | "put" | "delete"
type JsonOf<T> = T extends { content: { "application/json": infer B } } ? B : never
type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M & keyof paths[P]]>

/** The JSON of the success answer (200 or 201) of `M path`. */
export type ApiAnswer<P extends keyof paths, M extends Method> =
  Operation<P, M> extends { responses: infer R } ? JsonOf<R[200 & keyof R]> | JsonOf<R[201 & keyof R]> : never

/** The JSON body `M path` accepts. */
export type ApiBody<P extends keyof paths, M extends Method> =
  Operation<P, M> extends { requestBody?: infer B } ? JsonOf<NonNullable<B>> : never

/** One item of a list answer. */
export type Item<P extends keyof paths> = ApiAnswer<P, "get"> extends { data: ReadonlyArray<infer I> } ? I : never

export type Workspace = ApiAnswer<"/v1/workspaces/{workspaceId}", "get">
export type Project = Item<"/v1/projects">
export type Environment = Item<"/v1/environments">
export type Client = Item<"/v1/clients">
export type ClientCreated = ApiAnswer<"/v1/clients", "post">
export type CreateClient = ApiBody<"/v1/clients", "post">
export type User = Item<"/v1/users">
export type Webhook = Item<"/v1/webhooks">
export type ApiKey = Item<"/v1/api-keys">
export type UserIdentity = Item<"/v1/users/{userId}/identities">
export type UserPasskey = Item<"/v1/users/{userId}/passkeys">
export type UserSession = Item<"/v1/users/{userId}/sessions">
export type AuditEvent = Item<"/v1/audit-events">
export type UserExportJob = ApiAnswer<"/v1/user-export-jobs", "post">
export type WebhookDelivery = Item<"/v1/webhooks/{webhookId}/deliveries">
export type WebhookDeliveryDetail = ApiAnswer<"/v1/webhooks/{webhookId}/deliveries/{deliveryId}", "get">
