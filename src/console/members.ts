import { Clock, Effect, Schema } from "effect"
import { HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { Conflict, Forbidden, NotFound } from "../http/errors.js"
import { decodeJsonBody, decodeParams, decodeQuery, json, route } from "../http/route.js"
import { CurrentCaller } from "../management/auth/caller.js"
import { createPlatformUser } from "../management/auth/dashboard.js"
import { withCaller } from "../management/auth/service.js"
import { pageOf, parsePage } from "../management/conventions/pagination.js"
import { Audit } from "../platform/audit.js"
import { Config } from "../platform/config.js"
import { Mailer } from "../platform/mailer.js"
import { platformUserByEmail } from "./accounts.js"
import { CONSOLE_PATH, consoleUrl } from "./urls.js"

const Role = Schema.Literals(["owner", "admin", "member"])
const InviteBody = Schema.Struct({
  email: Schema.String.check(Schema.isPattern(/^[^\s@]{1,64}@[^\s@]+\.[^\s@]{2,}$/)),
  role: Role,
})
const RoleBody = Schema.Struct({ role: Role })
const MemberParams = Schema.Struct({ platformUserId: Schema.String.check(Schema.isPattern(/^usr_[a-z2-7]{32}$/)) })
const MembersQuery = Schema.Struct({ limit: Schema.optional(Schema.String), cursor: Schema.optional(Schema.String) })

interface MemberWithEmail {
  readonly platform_user_id: string
  readonly email: string
  readonly role: string
  readonly created_at: Date
  readonly updated_at: Date
}

const present = (m: MemberWithEmail) => ({
  platform_user_id: m.platform_user_id,
  email: m.email,
  role: m.role,
  created_at: m.created_at.toISOString(),
  updated_at: m.updated_at.toISOString(),
})

/** Invitations, role changes and removals are the Owner's (docs/decisions/admin-console.md, "Members"). */
const requireOwner = Effect.gen(function* () {
  const caller = yield* CurrentCaller
  if (caller.role !== "owner")
    return yield* new Forbidden({ detail: "Only an Owner of the Workspace can manage its members" })
  return caller
})

const memberOf = (workspaceId: string, platformUserId: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{
        role: string
      }>`select role from workspace_members where workspace_id = ${workspaceId} and platform_user_id = ${platformUserId} for update`,
  ).pipe(Effect.map((rows) => rows[0]))

/** A Workspace keeps at least one Owner: the last one can be neither demoted nor removed. */
const refuseLastOwner = (workspaceId: string, platformUserId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const owners = yield* sql<{ platform_user_id: string }>`select platform_user_id from workspace_members
    where workspace_id = ${workspaceId} and role = 'owner' for update`
    if (owners.length === 1 && owners[0]!.platform_user_id === platformUserId) {
      return yield* new Conflict({
        detail: "The Workspace's last Owner cannot be demoted or removed; make another member Owner first",
      })
    }
  })

/** GET /console/api/members: the Workspace's members with their email addresses (any member may read). */
const listMembers = withCaller(
  "workspace_members:read",
  Effect.gen(function* () {
    const caller = yield* CurrentCaller
    const sql = yield* SqlClient.SqlClient
    const page = yield* parsePage(yield* decodeQuery(MembersQuery))
    const rows = yield* sql<MemberWithEmail>`select m.platform_user_id, u.email, m.role, m.created_at, m.updated_at
    from workspace_members m join platform_users u on u.id = m.platform_user_id
    where m.workspace_id = ${caller.workspaceId} ${page.after === undefined ? sql`` : sql`and m.platform_user_id > ${page.after}`}
    order by m.platform_user_id limit ${page.limit + 1}`.pipe(Effect.orDie)
    return json(pageOf(rows, page, (r) => r.platform_user_id, present))
  }),
  { dashboardOnly: true },
)

/**
 * POST /console/api/invitations `{email, role}`: makes the address a member of the Workspace (a
 * platform user is created for a new address) and mails it the console's URL. Signing in with
 * Email OTP to that address proves it; there is no invitation token to steal.
 */
const invite = withCaller(
  undefined,
  Effect.gen(function* () {
    const caller = yield* requireOwner
    const sql = yield* SqlClient.SqlClient
    const config = yield* Config
    const audit = yield* Audit
    const mailer = yield* Mailer
    const body = yield* decodeJsonBody(InviteBody)
    const email = body.email.toLowerCase()
    const member = yield* sql
      .withTransaction(
        Effect.gen(function* () {
          yield* sql`select pg_advisory_xact_lock(hashtextextended(${`platform_users:${email}`}, 0))`
          const existing = yield* platformUserByEmail(email)
          if (existing !== undefined && (yield* memberOf(caller.workspaceId, existing)) !== undefined) {
            return yield* new Conflict({ detail: `${email} is already a member of this Workspace` })
          }
          const now = new Date(yield* Clock.currentTimeMillis)
          const platformUserId = existing ?? (yield* createPlatformUser(email))
          yield* sql`insert into workspace_members (workspace_id, platform_user_id, role, created_at, updated_at)
      values (${caller.workspaceId}, ${platformUserId}, ${body.role}, ${now}, ${now})`
          yield* audit.append({
            workspaceId: caller.workspaceId,
            actor: caller.actor,
            action: "workspace_member.invited",
            subjectType: "platform_user",
            subjectId: platformUserId,
            details: { role: body.role },
          })
          return { platform_user_id: platformUserId, email, role: body.role, created_at: now, updated_at: now }
        }),
      )
      .pipe(Effect.catchTag("SqlError", Effect.die))
    const [workspace] = yield* sql<{ name: string }>`select name from workspaces where id = ${caller.workspaceId}`.pipe(
      Effect.orDie,
    )
    // The membership stands even if the mail fails; the Owner can tell the person the URL.
    const mailed = yield* mailer
      .send({
        to: email,
        subject: `You are invited to ${workspace!.name}`,
        text: `You were made ${body.role} of the Workspace "${workspace!.name}".\n\nSign in to the console with this email address:\n${consoleUrl(config)}\n`,
      })
      .pipe(
        Effect.as(true),
        Effect.catch((e) => Effect.logWarning("invitation mail not sent", e).pipe(Effect.as(false))),
      )
    return json({ ...present(member), invitation_mailed: mailed }, 201)
  }),
  { dashboardOnly: true },
)

/** PATCH /console/api/members/{platformUserId} `{role}`. */
const changeRole = withCaller(
  undefined,
  Effect.gen(function* () {
    const caller = yield* requireOwner
    const sql = yield* SqlClient.SqlClient
    const audit = yield* Audit
    const { platformUserId } = yield* decodeParams(MemberParams)
    const body = yield* decodeJsonBody(RoleBody)
    const row = yield* sql
      .withTransaction(
        Effect.gen(function* () {
          const current = yield* memberOf(caller.workspaceId, platformUserId)
          if (current === undefined) return yield* new NotFound({ detail: "Not a member of this Workspace" })
          if (current.role === "owner" && body.role !== "owner")
            yield* refuseLastOwner(caller.workspaceId, platformUserId)
          const now = new Date(yield* Clock.currentTimeMillis)
          const [updated] =
            yield* sql<MemberWithEmail>`update workspace_members m set role = ${body.role}, updated_at = ${now}
      from platform_users u where u.id = m.platform_user_id and m.workspace_id = ${caller.workspaceId} and m.platform_user_id = ${platformUserId}
      returning m.platform_user_id, u.email, m.role, m.created_at, m.updated_at`
          yield* audit.append({
            workspaceId: caller.workspaceId,
            actor: caller.actor,
            action: "workspace_member.role_changed",
            subjectType: "platform_user",
            subjectId: platformUserId,
            details: { from: current.role, to: body.role },
          })
          return updated!
        }),
      )
      .pipe(Effect.catchTag("SqlError", Effect.die))
    return json(present(row))
  }),
  { dashboardOnly: true },
)

/** DELETE /console/api/members/{platformUserId}: the person keeps their console account. */
const removeMember = withCaller(
  undefined,
  Effect.gen(function* () {
    const caller = yield* requireOwner
    const sql = yield* SqlClient.SqlClient
    const audit = yield* Audit
    const { platformUserId } = yield* decodeParams(MemberParams)
    yield* sql
      .withTransaction(
        Effect.gen(function* () {
          const current = yield* memberOf(caller.workspaceId, platformUserId)
          if (current === undefined) return yield* new NotFound({ detail: "Not a member of this Workspace" })
          if (current.role === "owner") yield* refuseLastOwner(caller.workspaceId, platformUserId)
          yield* sql`delete from workspace_members where workspace_id = ${caller.workspaceId} and platform_user_id = ${platformUserId}`
          yield* audit.append({
            workspaceId: caller.workspaceId,
            actor: caller.actor,
            action: "workspace_member.removed",
            subjectType: "platform_user",
            subjectId: platformUserId,
            details: { role: current.role },
          })
        }),
      )
      .pipe(Effect.catchTag("SqlError", Effect.die))
    return HttpServerResponse.empty({ status: 204 })
  }),
  { dashboardOnly: true },
)

export const memberRoutes = [
  route("GET", `${CONSOLE_PATH}api/members`, listMembers),
  route("POST", `${CONSOLE_PATH}api/invitations`, invite),
  route("PATCH", `${CONSOLE_PATH}api/members/:platformUserId`, changeRole),
  route("DELETE", `${CONSOLE_PATH}api/members/:platformUserId`, removeMember),
]
