import { Clock, Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { json, route } from "../http/route.js"
import { CurrentCaller } from "../management/auth/caller.js"
import { withCaller } from "../management/auth/service.js"
import { sha256Hex } from "../platform/crypto.js"
import { Config } from "../platform/config.js"
import { Users } from "../users/service.js"
import { CONSOLE_PATH } from "./urls.js"

const signedInOnly = { dashboardOnly: true, noWorkspace: true } as const

/**
 * GET /console/api/session: who is signed in (the platform user, its email) and the Workspaces
 * it belongs to with its role in each: the console's switcher and what it offers depend on it.
 */
const whoIsSignedIn = withCaller(
  undefined,
  Effect.gen(function* () {
    const caller = yield* CurrentCaller
    const sql = yield* SqlClient.SqlClient
    const [user] = yield* sql<{
      id: string
      email: string
    }>`select id, email from platform_users where id = ${caller.platformUserId!}`.pipe(Effect.orDie)
    const workspaces = yield* sql<{ id: string; name: string; slug: string; status: string; role: string }>`
    select w.id, w.name, w.slug, w.status, m.role from workspace_members m join workspaces w on w.id = m.workspace_id
    where m.platform_user_id = ${caller.platformUserId!} order by w.name, w.id`.pipe(Effect.orDie)
    return json({ platform_user_id: user!.id, email: user!.email, workspaces }, 200, { "cache-control": "no-store" })
  }),
  signedInOnly,
)

const clearSessionCookie = (response: HttpServerResponse.HttpServerResponse, secure: boolean) =>
  HttpServerResponse.setCookieUnsafe(response, "dashboard_session", "", {
    httpOnly: true,
    sameSite: "strict",
    secure,
    path: "/",
    maxAge: "0 seconds",
  })

/**
 * POST /console/auth/logout: revokes both sessions of a console sign-in, the Dashboard session
 * and the platform Environment's login session behind it (with its refresh families), so the next
 * sign-in asks for a code or a passkey again. Cookie writes pass the dashboard CSRF rules.
 */
const signOut = withCaller(
  undefined,
  Effect.gen(function* () {
    const config = yield* Config
    const sql = yield* SqlClient.SqlClient
    const request = yield* HttpServerRequest.HttpServerRequest
    const users = yield* Users
    const token =
      request.cookies["dashboard_session"] ?? /^Bearer (\S+)$/i.exec(request.headers["authorization"] ?? "")?.[1]
    const now = new Date(yield* Clock.currentTimeMillis)
    yield* sql
      .withTransaction(
        Effect.gen(function* () {
          const [session] = yield* sql<{ id: string }>`update dashboard_sessions set revoked_at = ${now}
      where secret_hash = ${sha256Hex(token ?? "")} and revoked_at is null returning id`
          if (!session) return
          const [platform] = yield* sql<{
            environment_id: string
            user_id: string
            login_session_id: string | null
            workspace_id: string
          }>`
      select c.environment_id, c.user_id, c.login_session_id, e.workspace_id from console_sessions c
      join environments e on e.id = c.environment_id where c.dashboard_session_id = ${session.id}`
          if (platform?.login_session_id) {
            yield* users.revokeSessions({
              workspaceId: platform.workspace_id,
              environmentId: platform.environment_id,
              userId: platform.user_id,
              sessionId: platform.login_session_id,
              reason: "user_logout",
              actor: { type: "end_user", id: platform.user_id },
            })
          }
        }),
      )
      .pipe(Effect.orDie)
    return clearSessionCookie(
      HttpServerResponse.empty({ status: 204, headers: { "cache-control": "no-store" } }),
      config.publicScheme === "https",
    )
  }),
  signedInOnly,
)

export const sessionRoutes = [
  route("GET", `${CONSOLE_PATH}api/session`, whoIsSignedIn),
  route("POST", `${CONSOLE_PATH}auth/logout`, signOut),
]
