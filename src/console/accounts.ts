import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { createPlatformUser } from "../management/auth/dashboard.js"

/** The platform user (console account) of a verified email address, if any. */
export const platformUserByEmail = (email: string) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ id: string }>`select id from platform_users where email = ${email.toLowerCase()}`,
  ).pipe(Effect.map((rows) => rows[0]?.id))

/**
 * First run (docs/decisions/admin-console.md, "First Owner"): while the installation has no
 * platform user at all, the first person who signs in from this machine (a loopback socket peer,
 * no proxy) becomes one, then creates a Workspace and is its Owner. Everyone after is invited by
 * an Owner or created by the operator command `platform-user create`.
 */
export const accountForSignIn = (email: string, fromThisMachine: boolean) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const existing = yield* platformUserByEmail(email)
    if (existing !== undefined || !fromThisMachine) return existing
    return yield* sql.withTransaction(
      Effect.gen(function* () {
        yield* sql`select pg_advisory_xact_lock(hashtextextended('platform_users:first-run', 0))`
        const [{ n }] = (yield* sql<{ n: number }>`select count(*)::int as n from platform_users`) as [{ n: number }]
        if (n > 0) return yield* platformUserByEmail(email)
        return yield* createPlatformUser(email)
      }),
    )
  }).pipe(Effect.orDie)
