import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export interface BillingRow {
  readonly workspace_id: string
  readonly workspace_name: string
  readonly stripe_customer_id: string | null
  readonly subscription_id: string | null
  readonly subscription_status: string | null
  readonly past_due_since: Date | null
  readonly last_event_at: Date | null
}

/**
 * The Workspace's billing row, created empty when missing, locked FOR UPDATE (in the caller's
 * transaction): concurrent first uses wait here, so the Workspace gets one customer. Undefined
 * when there is no such Workspace (a webhook's metadata may name any id).
 */
export const lockBilling = (workspaceId: string, now: Date) =>
  SqlClient.SqlClient.use((sql) =>
    Effect.gen(function* () {
      yield* sql`insert into workspace_billing (workspace_id, created_at, updated_at)
    select id, ${now}, ${now} from workspaces where id = ${workspaceId}
    on conflict (workspace_id) do nothing`
      const rows =
        yield* sql<BillingRow>`select b.workspace_id, w.name as workspace_name, b.stripe_customer_id, b.subscription_id,
      b.subscription_status, b.past_due_since, b.last_event_at
    from workspace_billing b join workspaces w on w.id = b.workspace_id
    where b.workspace_id = ${workspaceId} for update of b`
      return rows[0]
    }),
  )

export const setCustomer = (workspaceId: string, customerId: string, now: Date) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql`update workspace_billing set stripe_customer_id = ${customerId}, updated_at = ${now} where workspace_id = ${workspaceId}`,
  )

export const billingOf = (workspaceId: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<
        Omit<BillingRow, "workspace_name">
      >`select workspace_id, stripe_customer_id, subscription_id, subscription_status, past_due_since, last_event_at
    from workspace_billing where workspace_id = ${workspaceId}`,
  ).pipe(Effect.map((rows) => rows[0]))

/** The Workspace of a Stripe customer, locked for the event's update. */
export const lockBillingByCustomer = (customerId: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<
        Omit<BillingRow, "workspace_name">
      >`select workspace_id, stripe_customer_id, subscription_id, subscription_status, past_due_since, last_event_at
    from workspace_billing where stripe_customer_id = ${customerId} for update`,
  ).pipe(Effect.map((rows) => rows[0]))

/**
 * Records a provider event once; false when it was already recorded (a redelivery). The row is
 * the event's lock: a concurrent redelivery waits on it, then finds it recorded.
 */
export const recordEvent = (e: { id: string; type: string; now: Date }) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{ id: string }>`insert into stripe_events (id, type, received_at) values (${e.id}, ${e.type}, ${e.now})
    on conflict (id) do nothing returning id`,
  ).pipe(Effect.map((rows) => rows.length === 1))

/** The Workspace a recorded event was applied to. */
export const setEventWorkspace = (eventId: string, workspaceId: string) =>
  SqlClient.SqlClient.use((sql) => sql`update stripe_events set workspace_id = ${workspaceId} where id = ${eventId}`)

export interface SubscriptionUpdate {
  readonly subscriptionId: string | null
  readonly subscriptionStatus: string | null
  readonly pastDueSince: Date | null
  readonly eventAt: Date
}

export const updateSubscription = (workspaceId: string, u: SubscriptionUpdate, now: Date) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql`update workspace_billing set subscription_id = ${u.subscriptionId}, subscription_status = ${u.subscriptionStatus},
      past_due_since = ${u.pastDueSince}, last_event_at = greatest(last_event_at, ${u.eventAt}), updated_at = ${now}
    where workspace_id = ${workspaceId}`,
  )

/** A checkout session we opened for a Workspace and its customer (sql/0178), in the request's transaction. */
export const insertCheckoutSession = (r: {
  id: string
  workspaceId: string
  customerId: string
  now: Date
  expiresAt: Date
}) =>
  SqlClient.SqlClient.use(
    (sql) => sql`insert into billing_checkout_sessions (id, workspace_id, stripe_customer_id, created_at, expires_at)
    values (${r.id}, ${r.workspaceId}, ${r.customerId}, ${r.now}, ${r.expiresAt})`,
  )

export interface CheckoutSessionRow {
  readonly workspace_id: string
  readonly stripe_customer_id: string
}

/** The Workspace and customer we opened a checkout session for; undefined for a session we did not open. */
export const checkoutSessionOf = (sessionId: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<CheckoutSessionRow>`select workspace_id, stripe_customer_id from billing_checkout_sessions where id = ${sessionId}`,
  ).pipe(Effect.map((rows) => rows[0]))

/** The ids among these that name a Workspace (a webhook's metadata may name any id). */
export const existingWorkspaces = (ids: ReadonlyArray<string>) =>
  SqlClient.SqlClient.use((sql) =>
    ids.length === 0
      ? Effect.succeed([] as Array<string>)
      : sql<{ id: string }>`select id from workspaces where id in ${sql.in(ids)} order by id`.pipe(
          Effect.map((rows) => rows.map((r) => r.id)),
        ),
  )

/** Housekeeping: a checkout session completes before it expires (at most 24 h); Stripe retries for 3 days. */
export const pruneCheckoutSessions = (cutoff: Date) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{ n: number }>`with gone as (delete from billing_checkout_sessions where expires_at < ${cutoff} returning 1)
    select count(*)::int as n from gone`,
  ).pipe(Effect.map((rows) => rows[0]?.n ?? 0))

/** Housekeeping: Stripe retries an event for 3 days; ids older than 30 days are forgotten. */
export const pruneEvents = (cutoff: Date) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{ n: number }>`with gone as (delete from stripe_events where received_at < ${cutoff} returning 1)
    select count(*)::int as n from gone`,
  ).pipe(Effect.map((rows) => rows[0]?.n ?? 0))
