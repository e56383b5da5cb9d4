import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { createPlatformUser, startDashboardSession } from "../management/auth/dashboard.js"
import type { AppConfig } from "../platform/config.js"
import type { Role } from "./roles.js"

export class OperatorRefused extends Schema.TaggedError<OperatorRefused>()("OperatorRefused", {
  message: Schema.String,
}) {}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/

const userByEmail = (email: string) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ id: string }>`select id from platform_users where email = ${email.toLowerCase()}`,
  ).pipe(Effect.map((rows) => rows[0]?.id))

/**
 * `platform-user create`: a dashboard account, optionally a member of one Workspace, so the
 * Dashboard-only routes (POST /workspaces, members, impersonation) are reachable outside tests.
 * An existing address is refused (nothing changes); the Workspace must exist.
 */
export const createPlatformUserCommand = Effect.fnUntraced(
  function* (input: { readonly email: string; readonly workspaceId?: string | undefined; readonly role: Role }) {
    const sql = yield* SqlClient.SqlClient
    if (!EMAIL.test(input.email))
      return yield* new OperatorRefused({ message: `--email must be an email address (got "${input.email}")` })
    return yield* sql.withTransaction(
      Effect.gen(function* () {
        yield* sql`select pg_advisory_xact_lock(hashtextextended(${`platform_users:${input.email.toLowerCase()}`}, 0))`
        if ((yield* userByEmail(input.email)) !== undefined) {
          return yield* new OperatorRefused({
            message: `A platform user with the email ${input.email.toLowerCase()} exists already`,
          })
        }
        if (input.workspaceId !== undefined) {
          const [ws] = yield* sql<{ id: string }>`select id from workspaces where id = ${input.workspaceId}`
          if (!ws) return yield* new OperatorRefused({ message: `No Workspace ${input.workspaceId}` })
        }
        const id = yield* createPlatformUser(
          input.email,
          input.workspaceId === undefined ? undefined : { workspaceId: input.workspaceId, role: input.role },
        )
        return {
          platform_user_id: id,
          email: input.email.toLowerCase(),
          ...(input.workspaceId === undefined ? {} : { workspace_id: input.workspaceId, role: input.role }),
        }
      }),
    )
  },
  Effect.catchTag("SqlError", Effect.die),
)

/**
 * `dashboard-session create`: signs a platform user in (12-hour server-side session) and
 * prints the secret once, as the `dashboard_session` cookie for the Management host or as
 * `Authorization: Bearer` (scripts). Cookie writes must come from DASHBOARD_ORIGINS.
 */
export const createDashboardSessionCommand = Effect.fnUntraced(function* (config: AppConfig, email: string) {
  const id = yield* userByEmail(email).pipe(Effect.orDie)
  if (id === undefined)
    return yield* new OperatorRefused({
      message: `No platform user with the email ${email.toLowerCase()}: create one with platform-user create`,
    })
  const session = yield* startDashboardSession(id)
  const maxAge = Math.floor((session.expiresAt.getTime() - session.createdAt.getTime()) / 1000)
  return {
    platform_user_id: id,
    dashboard_session: session.token,
    expires_at: session.expiresAt.toISOString(),
    management_url: `${config.publicScheme}://${config.managementHost}`,
    // Host-only, HttpOnly and SameSite=Strict: scripts cannot read it and other sites never send it.
    set_cookie: `dashboard_session=${session.token}; Path=/; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${config.publicScheme === "https" ? "; Secure" : ""}`,
  }
})
