import { Clock, Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { SqlClient } from "effect/sql"
import { Forbidden } from "../../http/errors.js"
import { Audit } from "../../platform/audit.js"
import { Config } from "../../platform/config.js"
import { Crypto, sha256Hex } from "../../platform/crypto.js"
import { Ids } from "../../platform/ids.js"
import type { EnvironmentRecord } from "../../tenancy/schema.js"
import { issuerOf } from "../../tenancy/urls.js"
import { lockUser } from "../../users/repo.js"
import { CurrentCaller } from "../auth/caller.js"
import { UserNotFound, UserPendingDeletion } from "../users/errors.js"
import { ImpersonationDisabled, ImpersonationTargetBlocked } from "./errors.js"
import * as repo from "./repo.js"
import type { StartBody } from "./schema.js"
import { FORBIDDEN_SCOPES, IMPERSONATION_SCOPE, mintImpersonationToken } from "./token.js"

/** The cookie of the active impersonation on the Management host (`__Host-` under https). */
export const impersonationCookieName = (scheme: "http" | "https") =>
  scheme === "https" ? "__Host-impersonation_session" : "impersonation_session"

const auditEnded = Effect.fnUntraced(function* (row: repo.ImpersonationRow, reason: "stopped" | "replaced") {
  const caller = yield* CurrentCaller
  yield* (yield* Audit).append({
    workspaceId: row.workspace_id,
    environmentId: row.environment_id,
    actor: caller.actor,
    action: "impersonation.stopped",
    subjectType: "user",
    subjectId: row.target_user_id,
    details: { impersonation_id: row.id, reason, impersonator_id: row.platform_user_id },
  })
})

/**
 * POST /impersonation (spec: impersonation:create; Owner/Admin Dashboard session only;
 * Environment setting `impersonation_enabled` must be on; not startable by API key). The
 * route already refused API keys and callers without the scope; the role is checked again
 * here. One SQL transaction: the caller's earlier live impersonation ends (`replaced`: a
 * browser holds one impersonation cookie), the new one is stored (cookie secret hashed) and
 * audited with its reason. No domain event fits (none of the 14 types).
 */
export const startImpersonation = Effect.fnUntraced(function* (env: EnvironmentRecord, body: StartBody) {
  const caller = yield* CurrentCaller
  if (
    caller.kind !== "dashboard" ||
    (caller.role !== "owner" && caller.role !== "admin") ||
    caller.platformUserId === undefined
  ) {
    return yield* new Forbidden({ detail: "Only a Workspace Owner or Admin in the Dashboard can impersonate" })
  }
  if (!env.impersonationEnabled) {
    return yield* new ImpersonationDisabled({
      detail: "Impersonation is disabled for this Environment (setting impersonation_enabled)",
    })
  }
  const config = yield* Config
  const crypto = yield* Crypto
  const sql = yield* SqlClient.SqlClient
  const id = yield* (yield* Ids).make("imp")
  const cookieSecret = yield* crypto.randomToken(32)
  const nowMs = yield* Clock.currentTimeMillis
  const expiresAtMs = nowMs + body.duration_minutes * 60_000
  const platformUserId = caller.platformUserId
  const { user, accessToken } = yield* sql
    .withTransaction(
      Effect.gen(function* () {
        // The user row is locked: a block or deletion racing this start lands before (refused
        // here) or after (its security-version bump makes the token's `sv` stale).
        const user = yield* lockUser(env.id, body.user_id).pipe(Effect.orDie)
        if (!user) return yield* new UserNotFound({ detail: "User not found" })
        if (user.status === "pending_deletion")
          return yield* new UserPendingDeletion({ detail: "The user is pending deletion" })
        if (user.status === "blocked")
          return yield* new ImpersonationTargetBlocked({ detail: "A blocked user cannot be impersonated" })
        const replaced = yield* repo
          .endImpersonations({ platformUserId }, "replaced", new Date(nowMs))
          .pipe(Effect.orDie)
        for (const row of replaced) yield* auditEnded(row, "replaced")
        yield* repo
          .insertImpersonation({
            id,
            workspaceId: env.workspaceId,
            environmentId: env.id,
            platformUserId,
            targetUserId: user.id,
            reason: body.reason,
            durationMinutes: body.duration_minutes,
            cookieHash: sha256Hex(cookieSecret),
            startedAt: new Date(nowMs),
            expiresAt: new Date(expiresAtMs),
          })
          .pipe(Effect.orDie)
        yield* (yield* Audit).append({
          workspaceId: env.workspaceId,
          environmentId: env.id,
          actor: caller.actor,
          action: "impersonation.started",
          subjectType: "user",
          subjectId: user.id,
          details: {
            impersonation_id: id,
            reason: body.reason,
            duration_minutes: body.duration_minutes,
            expires_at: new Date(expiresAtMs).toISOString(),
          },
        })
        const accessToken = yield* mintImpersonationToken({
          issuer: issuerOf(config, env.id),
          environmentId: env.id,
          impersonationId: id,
          userId: user.id,
          securityVersion: user.security_version,
          actorPlatformUserId: platformUserId,
          issuedAtMs: nowMs,
          expiresAtMs,
        })
        return { user, accessToken }
      }),
    )
    .pipe(Effect.catchTag("SqlError", (e) => Effect.die(e)))
  return {
    cookieSecret,
    cookieMaxAgeSeconds: body.duration_minutes * 60,
    body: {
      id,
      environment_id: env.id,
      actor: { type: "workspace_member" as const, id: platformUserId },
      target_user: { id: user.id, email: user.email, name: user.name },
      reason: body.reason,
      duration_minutes: body.duration_minutes,
      started_at: new Date(nowMs).toISOString(),
      expires_at: new Date(expiresAtMs).toISOString(),
      forbidden_scopes: [...FORBIDDEN_SCOPES],
      access_token: accessToken,
      token_type: "Bearer" as const,
      expires_in: body.duration_minutes * 60,
      scope: IMPERSONATION_SCOPE,
    },
  }
})

/**
 * POST /impersonation/stop ("authenticated request; clears the active impersonation
 * cookie"). Ends the impersonation the cookie names, when it belongs to the caller (a
 * Dashboard user's own, or one in an API key's Workspace); a Dashboard session without the
 * cookie ends its own live impersonations. The answer always clears the cookie; stopping
 * when nothing is live answers `stopped: false` and changes nothing.
 */
export const stopImpersonation = Effect.gen(function* () {
  const caller = yield* CurrentCaller
  const config = yield* Config
  const request = yield* HttpServerRequest.HttpServerRequest
  const sql = yield* SqlClient.SqlClient
  const secret = request.cookies[impersonationCookieName(config.publicScheme)]
  const now = new Date(yield* Clock.currentTimeMillis)
  const owner =
    caller.kind === "dashboard"
      ? {
          platformUserId: caller.platformUserId ?? "",
          ...(caller.workspaceId !== "" ? { workspaceId: caller.workspaceId } : {}),
        }
      : { workspaceId: caller.workspaceId }
  const ended = yield* sql
    .withTransaction(
      Effect.gen(function* () {
        const rows =
          secret !== undefined && secret !== ""
            ? yield* repo.endImpersonations({ cookieHash: sha256Hex(secret), ...owner }, "stopped", now)
            : caller.kind === "dashboard"
              ? yield* repo.endImpersonations(owner, "stopped", now)
              : []
        for (const row of rows) yield* auditEnded(row, "stopped")
        return rows
      }),
    )
    .pipe(Effect.orDie)
  return {
    stopped: ended.length > 0,
    impersonation_ids: ended.map((r) => r.id),
    ended_at: ended.length > 0 ? now.toISOString() : null,
  }
})
