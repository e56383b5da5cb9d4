import { Clock, Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { Forbidden, InsufficientScope, InvalidRequest, Unauthorized } from "../../http/errors.js"
import { Config } from "../../platform/config.js"
import { sha256Hex } from "../../platform/crypto.js"
import { API_KEY_PREFIX } from "../../tenancy/service.js"
import { consumeManagementBudget } from "../conventions/budget.js"
import { type Caller, CurrentCaller } from "./caller.js"
import {
  insufficientScopeChallenge,
  invalidTokenChallenge,
  malformedChallenge,
  noCredentialsChallenge,
} from "./challenge.js"
import { checkCookieWrite } from "./csrf.js"
import { authenticateDashboard, DASHBOARD_TOKEN_PREFIX } from "./dashboard.js"
import * as repo from "./repo.js"

const bearer = (header: string | undefined) => {
  const m = header === undefined ? null : /^Bearer ([A-Za-z0-9._~+/=-]+)$/i.exec(header)
  return m ? m[1]! : undefined
}

/** Authenticates `Authorization: Bearer sk_live_...`; revoked, expired or unknown keys are 401. */
export const authenticateApiKey = Effect.fnUntraced(function* (
  token: string | undefined,
  /** The challenge when no token came: none sent, or an Authorization header of another shape. */
  missing: string = noCredentialsChallenge,
) {
  if (token === undefined || !token.startsWith(API_KEY_PREFIX)) {
    const detail = "Send Authorization: Bearer <API key>"
    return yield* new Unauthorized({
      detail,
      wwwAuthenticate: token === undefined ? missing : invalidTokenChallenge("The token is not an API key"),
    })
  }
  // The secret has 256 bits: its SHA-256 is an indexed lookup key, and no timing leak matters.
  const row = yield* repo.apiKeyByHash(sha256Hex(token)).pipe(Effect.orDie)
  const now = yield* Clock.currentTimeMillis
  if (!row || row.revoked_at !== null || (row.expires_at !== null && row.expires_at.getTime() <= now)) {
    const detail = "The API key is unknown, revoked or expired"
    return yield* new Unauthorized({ detail, wwwAuthenticate: invalidTokenChallenge(detail) })
  }
  const caller: Caller = {
    kind: "api_key",
    workspaceId: row.workspace_id,
    environmentId: row.environment_id,
    scopes: new Set(row.scopes),
    actor: { type: "api_key", id: row.id },
  }
  return caller
})

export interface CallerRequirements {
  /** Only Dashboard sessions may call (POST /workspaces, impersonation). */
  readonly dashboardOnly?: boolean
  /** The route needs no Workspace (a Dashboard session without X-Workspace-Id may call it). */
  readonly noWorkspace?: boolean
  /** The scope binds API keys only: a Dashboard session's role decides (GET /workspaces: its member Workspaces). */
  readonly scopeForApiKeysOnly?: boolean
}

/**
 * Authenticates the caller (API key, or Dashboard session by `dsh_` bearer or the
 * `dashboard_session` cookie), checks the scope, and runs the handler as that caller.
 * API keys use their own Workspace and ignore `X-Workspace-Id`.
 */
export const withCaller = <A, E, R>(
  scope: string | undefined,
  handler: Effect.Effect<A, E, R>,
  requirements: CallerRequirements = {},
) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const headerToken = bearer(request.headers["authorization"])
    const cookieToken = headerToken === undefined ? request.cookies["dashboard_session"] : undefined
    if (cookieToken !== undefined) yield* checkCookieWrite(request, yield* Config)
    const token = headerToken ?? cookieToken
    const caller = token?.startsWith(DASHBOARD_TOKEN_PREFIX)
      ? yield* authenticateDashboard(token, request.headers["x-workspace-id"])
      : yield* authenticateApiKey(
          token,
          request.headers["authorization"] === undefined
            ? noCredentialsChallenge
            : malformedChallenge("The Authorization header is not a Bearer token"),
        )
    yield* consumeManagementBudget(caller)
    if (requirements.dashboardOnly && caller.kind !== "dashboard") {
      return yield* new Forbidden({ detail: "Only a Dashboard session can call this route" })
    }
    if (caller.kind === "dashboard" && caller.workspaceId === "" && !requirements.noWorkspace) {
      return yield* new InvalidRequest({ detail: "Dashboard session calls must send X-Workspace-Id" })
    }
    const scoped = scope !== undefined && (caller.kind === "api_key" || !requirements.scopeForApiKeysOnly)
    if (scoped && !caller.scopes.has(scope))
      return yield* new InsufficientScope(
        headerToken === undefined
          ? { required: scope }
          : { required: scope, wwwAuthenticate: insufficientScopeChallenge(scope) },
      )
    return yield* Effect.provideService(handler, CurrentCaller, caller)
  })

/**
 * Where a `workspace_id` is sent (query or body) it must equal the authenticated Workspace
 * (spec: Management common rule 5).
 */
export const requireWorkspaceMatch = Effect.fnUntraced(function* (workspaceId: string | undefined) {
  const caller = yield* CurrentCaller
  if (workspaceId !== undefined && workspaceId !== caller.workspaceId) {
    return yield* new InvalidRequest({
      detail: "workspace_id must match X-Workspace-Id (the authenticated Workspace)",
    })
  }
})
