import { Clock, Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { SqlClient } from "effect/sql"
import { InsufficientScope, Unauthorized } from "../../http/errors.js"
import { sha256Hex } from "../../platform/crypto.js"
import { API_KEY_PREFIX } from "../../tenancy/service.js"
import { type Caller, CurrentCaller } from "./caller.js"
import * as repo from "./repo.js"

const bearer = (header: string | undefined) => {
  const m = header === undefined ? null : /^Bearer ([A-Za-z0-9._~+/=-]+)$/i.exec(header)
  return m ? m[1]! : undefined
}

/** Authenticates `Authorization: Bearer sk_live_...`; revoked, expired or unknown keys are 401. */
export const authenticateApiKey = (token: string | undefined) => Effect.gen(function* () {
  if (token === undefined || !token.startsWith(API_KEY_PREFIX)) {
    return yield* new Unauthorized({ detail: "Send Authorization: Bearer <API key>" })
  }
  // The secret has 256 bits: its SHA-256 is an indexed lookup key, and no timing leak matters.
  const row = yield* repo.apiKeyByHash(sha256Hex(token)).pipe(Effect.orDie)
  const now = yield* Clock.currentTimeMillis
  if (!row || row.revoked_at !== null || (row.expires_at !== null && row.expires_at.getTime() <= now)) {
    return yield* new Unauthorized({ detail: "The API key is unknown, revoked or expired" })
  }
  const caller: Caller = {
    kind: "api_key", workspaceId: row.workspace_id, environmentId: row.environment_id,
    scopes: new Set(row.scopes), actor: { type: "api_key", id: row.id },
  }
  return caller
})

/** Runs a Management handler as the authenticated caller, after checking its scope. */
export const withCaller = <A, E, R>(scope: string | undefined, handler: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const caller = yield* authenticateApiKey(bearer(request.headers["authorization"]))
    if (scope !== undefined && !caller.scopes.has(scope)) return yield* new InsufficientScope({ required: scope })
    return yield* Effect.provideService(handler, CurrentCaller, caller)
  }) as Effect.Effect<A, E | Unauthorized | InsufficientScope, Exclude<R, CurrentCaller> | HttpServerRequest.HttpServerRequest | SqlClient.SqlClient>
