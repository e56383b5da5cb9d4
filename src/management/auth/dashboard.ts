import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { Forbidden, InvalidRequest, Unauthorized } from "../../http/errors.js"
import { invalidTokenChallenge } from "./challenge.js"
import { Crypto, sha256Hex } from "../../platform/crypto.js"
import { Ids } from "../../platform/ids.js"
import { SCOPES } from "../../tenancy/scopes.js"
import type { Caller } from "./caller.js"

/** Dashboard session tokens: `dsh_` + a 256-bit secret; the server keeps only its SHA-256. */
export const DASHBOARD_TOKEN_PREFIX = "dsh_"
const SESSION_TTL_MS = 12 * 3600_000

/**
 * Creates a server-side Dashboard session for a platform user. The dashboard itself is a
 * later capability; tests and the CLI mint sessions through this function.
 */
export const startDashboardSession = Effect.fnUntraced(function* (platformUserId: string) {
  const sql = yield* SqlClient.SqlClient
  const crypto = yield* Crypto
  const ids = yield* Ids
  const id = yield* ids.make("dsh")
  const token = `${DASHBOARD_TOKEN_PREFIX}${yield* crypto.randomToken(32)}`
  const now = yield* Clock.currentTimeMillis
  const expiresAt = new Date(now + SESSION_TTL_MS)
  yield* sql`insert into dashboard_sessions (id, secret_hash, platform_user_id, created_at, expires_at)
    values (${id}, ${sha256Hex(token)}, ${platformUserId}, ${new Date(now)}, ${expiresAt})`
  return { id, token, createdAt: new Date(now), expiresAt }
}, Effect.orDie)

export const mintDashboardSession = (platformUserId: string) =>
  Effect.map(startDashboardSession(platformUserId), (s) => s.token)

/** Creates a platform user (dashboard account) and, optionally, a membership. */
export const createPlatformUser = Effect.fnUntraced(function* (
  email: string,
  membership?: { workspaceId: string; role: "owner" | "admin" | "member" },
) {
  const sql = yield* SqlClient.SqlClient
  const ids = yield* Ids
  const id = yield* ids.make("usr")
  const now = new Date(yield* Clock.currentTimeMillis)
  yield* sql`insert into platform_users (id, email, created_at) values (${id}, ${email.toLowerCase()}, ${now})`
  if (membership) {
    yield* sql`insert into workspace_members (workspace_id, platform_user_id, role, created_at, updated_at)
        values (${membership.workspaceId}, ${id}, ${membership.role}, ${now}, ${now})`
  }
  return id
}, Effect.orDie)

/**
 * Authenticates a Dashboard session. Calls must send `X-Workspace-Id`, matched against the
 * user's memberships (spec: Authentication rule 2); the role decides what it may do.
 * A session without a workspace header can only reach routes that need none (POST /workspaces).
 */
export const authenticateDashboard = Effect.fnUntraced(function* (token: string, workspaceHeader: string | undefined) {
  const sql = yield* SqlClient.SqlClient
  const now = yield* Clock.currentTimeMillis
  const [session] = yield* sql<{ platform_user_id: string }>`select platform_user_id from dashboard_sessions
    where secret_hash = ${sha256Hex(token)} and revoked_at is null and expires_at > ${new Date(now)}`.pipe(Effect.orDie)
  if (!session) {
    const detail = "The Dashboard session is unknown or expired"
    return yield* new Unauthorized({ detail, wwwAuthenticate: invalidTokenChallenge(detail) })
  }
  const actor = { type: "workspace_member" as const, id: session.platform_user_id }
  if (workspaceHeader === undefined || workspaceHeader === "") {
    const caller: Caller = {
      kind: "dashboard",
      workspaceId: "",
      environmentId: null,
      scopes: new Set(),
      actor,
      platformUserId: session.platform_user_id,
    }
    return caller
  }
  if (!/^wsp_[a-z2-7]{32}$/.test(workspaceHeader))
    return yield* new InvalidRequest({ detail: "X-Workspace-Id is not a Workspace id" })
  const [member] = yield* sql<{ role: "owner" | "admin" | "member" }>`select role from workspace_members
    where workspace_id = ${workspaceHeader} and platform_user_id = ${session.platform_user_id}`.pipe(Effect.orDie)
  if (!member) return yield* new Forbidden({ detail: "Not a member of this Workspace" })
  const caller: Caller = {
    kind: "dashboard",
    workspaceId: workspaceHeader,
    environmentId: null,
    scopes: scopesOfRole(member.role),
    actor,
    role: member.role,
    platformUserId: session.platform_user_id,
  }
  return caller
})

/** Owners and Admins hold every scope; Members read. (Recorded in docs/decisions/management-api.md.) */
export const scopesOfRole = (role: "owner" | "admin" | "member"): ReadonlySet<string> =>
  new Set(role === "member" ? SCOPES.filter((s) => s.endsWith(":read")) : SCOPES)
