import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export interface DeliveryRow {
  readonly id: string
  readonly workspace_id: string
  readonly environment_id: string
  readonly message_id: string
  readonly recipient_hash: string
}

export const workspaceOfEnvironment = (environmentId: string) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ workspace_id: string }>`select workspace_id from environments where id = ${environmentId}`,
  ).pipe(Effect.map((rows) => rows[0]?.workspace_id))

export const insertDelivery = (d: {
  id: string
  workspaceId: string
  environmentId: string
  messageId: string
  recipientHash: string
  purpose: string
  now: Date
}) =>
  SqlClient.SqlClient.use(
    (
      sql,
    ) => sql`insert into mail_deliveries (id, workspace_id, environment_id, message_id, recipient_hash, purpose, sent_at)
    values (${d.id}, ${d.workspaceId}, ${d.environmentId}, ${d.messageId}, ${d.recipientHash}, ${d.purpose}, ${d.now})`,
  )

/** The message id the mail provider gave the delivery (Amazon SES's, from its SMTP reply). */
export const setProviderMessageId = (deliveryId: string, providerMessageId: string) =>
  SqlClient.SqlClient.use(
    (sql) => sql`update mail_deliveries set provider_message_id = ${providerMessageId} where id = ${deliveryId}`,
  )

export type DeliveryRef =
  | { readonly deliveryId: string }
  | { readonly providerMessageId: string }
  | { readonly messageId: string }

/** A delivery by its id, by the provider's message id, or by the Message-ID it was sent with (angle brackets optional). */
export const findDelivery = (ref: DeliveryRef) =>
  SqlClient.SqlClient.use((sql) => {
    const where =
      "deliveryId" in ref
        ? sql`id = ${ref.deliveryId}`
        : "providerMessageId" in ref
          ? sql`provider_message_id = ${ref.providerMessageId}`
          : sql`message_id = ${`<${ref.messageId.trim().replace(/^<|>$/g, "")}>`}`
    return sql<DeliveryRow>`select id, workspace_id, environment_id, message_id, recipient_hash from mail_deliveries where ${where}`
  }).pipe(Effect.map((rows) => rows[0]))

/** Records a bounce once per delivery and type; false when already recorded. */
export const insertBounce = (b: {
  deliveryId: string
  bounceType: "hard" | "soft"
  source: "generic" | "ses"
  now: Date
}) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ delivery_id: string }>`insert into mail_bounces (delivery_id, bounce_type, source, received_at)
    values (${b.deliveryId}, ${b.bounceType}, ${b.source}, ${b.now}) on conflict do nothing returning delivery_id`,
  ).pipe(Effect.map((rows) => rows.length === 1))

export const suppress = (s: {
  environmentId: string
  recipientHash: string
  deliveryId: string
  emailNormalized: string
  now: Date
}) =>
  SqlClient.SqlClient.use((sql) =>
    Effect.gen(function* () {
      yield* sql`insert into email_suppressions (environment_id, recipient_hash, delivery_id, created_at)
      values (${s.environmentId}, ${s.recipientHash}, ${s.deliveryId}, ${s.now}) on conflict do nothing`
      const users = yield* sql<{ id: string }>`update users set email_suppressed = true
      where environment_id = ${s.environmentId} and email_normalized = ${s.emailNormalized} and not email_suppressed returning id`
      return users.map((u) => u.id)
    }),
  )

/** Whether a suppression carries any of `hashes` (the address's current and earlier hashes, ./recipient.ts). */
export const isSuppressed = (environmentId: string, hashes: ReadonlyArray<string>) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{ n: number }>`select 1 as n from email_suppressions
    where environment_id = ${environmentId} and recipient_hash = any(${hashes as Array<string>}::text[])`,
  ).pipe(Effect.map((rows) => rows.length > 0))

/** Housekeeping: delivery records (and their bounces) older than the retention are deleted. */
export const pruneDeliveries = (cutoff: Date) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{
        n: number
      }>`with gone as (delete from mail_deliveries where sent_at < ${cutoff} returning 1) select count(*)::int as n from gone`,
  ).pipe(Effect.map((rows) => rows[0]?.n ?? 0))
