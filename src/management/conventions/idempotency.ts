import { Clock, Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import {
  IdempotencyKeyConflict,
  InvalidRequest,
  type InvalidRequestBody,
  type PayloadTooLarge,
} from "../../http/errors.js"
import { bodyText } from "../../http/route.js"
import { canonicalJson } from "../../platform/canonical-json.js"
import { Crypto, sha256Hex } from "../../platform/crypto.js"
import { type Caller, CurrentCaller } from "../auth/caller.js"

const RETENTION_MS = 24 * 3600_000

/**
 * The credential a record belongs to: the API key, or the Dashboard user (any of their
 * sessions, so a user who signs in again can still retry). Another caller of the same
 * Workspace with the same key value gets its own record, never this one's answer.
 */
export const callerCredential = (caller: Caller) =>
  caller.kind === "api_key" ? `api_key:${caller.actor.id ?? ""}` : `platform_user:${caller.platformUserId ?? ""}`

/** AES-GCM associated data of a stored answer: the row's columns workspace_id, caller and key (re-sealing needs it too). */
export const sealContext = (workspaceId: string, credential: string, key: string) => ({
  purpose: "idempotent-response",
  table: "idempotency_keys",
  rowId: `${workspaceId}/${credential}/${key}`,
})

/** Response headers a replay repeats (the body's own metadata; `no-store` is added to every replay). */
const KEPT_HEADERS = ["etag", "location", "cache-control"] as const

const bodyHashOf = (text: string) => {
  if (text.trim() === "") return sha256Hex("")
  try {
    return sha256Hex(canonicalJson(JSON.parse(text)))
  } catch {
    return sha256Hex(text)
  }
}

const responseBytes = (response: HttpServerResponse.HttpServerResponse) =>
  response.body._tag === "Uint8Array" ? Buffer.from(response.body.body).toString("utf8") : ""

/**
 * `Idempotency-Key` on Management writes (spec: common rule 2). The handler runs in one SQL
 * transaction that first inserts the key: a concurrent request with the same key waits on
 * that row, then replays the committed answer, so two first requests make one resource.
 * Only 2xx answers are kept (sealed, 24 h); a failed request changed nothing and its
 * transaction, key row included, rolls back, so a retry runs again.
 *
 * Authorisation comes first: routes wrap this inside `withCaller` (authentication and the
 * route's scope), and a record is found only under the caller's own credential, whose pin
 * and limits are those that produced the stored answer (docs/decisions/rate-limits-and-caches.md). A replay is always
 * `Cache-Control: no-store`: it may carry a secret returned once.
 */
export const withIdempotency = <E, R>(
  handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
): Effect.Effect<
  HttpServerResponse.HttpServerResponse,
  E | InvalidRequest | IdempotencyKeyConflict | PayloadTooLarge | InvalidRequestBody,
  R | HttpServerRequest.HttpServerRequest | SqlClient.SqlClient | CurrentCaller | Crypto
> => {
  return Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    // The concrete path and query: a key reused for another resource is a conflict, never a replay.
    const routePattern = request.url
    const key = request.headers["idempotency-key"]
    const sql = yield* SqlClient.SqlClient
    if (key === undefined)
      return yield* sql.withTransaction(handler).pipe(Effect.catchTag("SqlError", (e) => Effect.die(e)))
    if (key.length < 1 || key.length > 255)
      return yield* new InvalidRequest({ detail: "Idempotency-Key must be 1 to 255 characters" })
    const caller = yield* CurrentCaller
    // Dashboard calls without a Workspace (POST /workspaces) keep keys per platform user.
    const namespace = caller.workspaceId !== "" ? caller.workspaceId : `dashboard:${caller.platformUserId ?? ""}`
    const credential = callerCredential(caller)
    const crypto = yield* Crypto
    const bodyHash = bodyHashOf(yield* bodyText)
    const now = yield* Clock.currentTimeMillis
    return yield* sql
      .withTransaction(
        Effect.gen(function* () {
          const mine = sql`workspace_id = ${namespace} and caller = ${credential} and key = ${key}`
          yield* sql`delete from idempotency_keys where ${mine} and expires_at <= ${new Date(now)}`
          const inserted =
            yield* sql`insert into idempotency_keys (workspace_id, caller, key, method, route, body_hash, created_at, expires_at)
        values (${namespace}, ${credential}, ${key}, ${request.method}, ${routePattern}, ${bodyHash}, ${new Date(now)}, ${new Date(now + RETENTION_MS)})
        on conflict (workspace_id, caller, key) do nothing returning key`
          if (inserted.length === 0) {
            const [existing] = yield* sql<{
              method: string
              route: string
              body_hash: string
              response_status: number | null
              response_sealed: string | null
            }>`
          select method, route, body_hash, response_status, response_sealed from idempotency_keys where ${mine}`
            if (
              !existing ||
              existing.method !== request.method ||
              existing.route !== routePattern ||
              existing.body_hash !== bodyHash
            ) {
              return yield* new IdempotencyKeyConflict()
            }
            const opened = yield* crypto
              .open(sealContext(namespace, credential, key), existing.response_sealed!)
              .pipe(Effect.orDie)
            const stored = JSON.parse(opened.toString("utf8")) as { body: string; headers: Record<string, string> }
            return HttpServerResponse.text(stored.body, {
              status: existing.response_status!,
              contentType: "application/json",
              headers: { ...stored.headers, "cache-control": "no-store", "idempotent-replayed": "true" },
            })
          }
          const response = yield* handler
          if (response.status >= 200 && response.status < 300) {
            const headers: Record<string, string> = {}
            for (const name of KEPT_HEADERS) if (response.headers[name]) headers[name] = response.headers[name]
            const sealed = yield* crypto.seal(
              sealContext(namespace, credential, key),
              JSON.stringify({ body: responseBytes(response), headers }),
            )
            yield* sql`update idempotency_keys set response_status = ${response.status}, response_sealed = ${sealed} where ${mine}`
          } else {
            yield* sql`delete from idempotency_keys where ${mine}`
          }
          return response
        }),
      )
      .pipe(Effect.catchTag("SqlError", (e) => Effect.die(e)))
  })
}
