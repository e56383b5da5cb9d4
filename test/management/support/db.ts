import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { TestApp } from "../../support/app.js"

/** Runs SQL on the app's database (seeding, and assertions on stored state). */
export const query = <A extends object = Record<string, any>>(
  app: TestApp,
  text: string,
  params: ReadonlyArray<unknown> = [],
) =>
  app.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      return yield* sql.unsafe<A>(text, params as Array<unknown>)
    }),
  ) as Promise<ReadonlyArray<A>>

export const countRows = async (app: TestApp, table: "clients" | "connections" | "domains", environmentId: string) =>
  (
    await query<{ n: number }>(app, `select count(*)::int as n from ${table} where environment_id = $1`, [
      environmentId,
    ])
  )[0]!.n

/** Table sizes of one Environment, to assert that a refused request changed nothing. */
export const snapshot = async (app: TestApp, environmentId: string) => {
  const [row] = await query(
    app,
    `select
      (select count(*)::int from users where environment_id = $1) as users,
      (select coalesce(sum(version), 0)::int from users where environment_id = $1) as versions,
      (select count(*)::int from event_outbox where environment_id = $1) as events,
      (select count(*)::int from audit_events where environment_id = $1) as audits,
      (select count(*)::int from identities where environment_id = $1) as identities,
      (select count(*)::int from passkeys where environment_id = $1) as passkeys,
      (select count(*)::int from login_sessions where environment_id = $1 and revoked_at is null) as live_sessions`,
    [environmentId],
  )
  return row!
}
