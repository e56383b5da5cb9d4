import { Clock, Effect, Option } from "effect"
import { HttpServerRequest } from "effect/http"
import { SqlClient } from "effect/sql"
import { CurrentEnvironment } from "../../tenancy/current-environment.js"
import { InvalidRequest } from "../../http/errors.js"
import { issueAuthorizationCode } from "../../oidc/codes/issue.js"
import { Audit } from "../../platform/audit.js"
import { Config } from "../../platform/config.js"
import { Crypto, sha256Hex } from "../../platform/crypto.js"
import { Events } from "../../platform/events/service.js"
import { Ids } from "../../platform/ids.js"
import { ipPrefixHash } from "../../platform/ip-prefix.js"
import { CurrentRequest } from "../../platform/request-context.js"
import { deviceNameOf } from "../../sessions/device-name.js"
import { lockUser } from "../../users/repo.js"
import { type LoginClient, loginClient } from "../clients.js"
import { assertOriginAllowedForClient } from "../../http/cors/client-origins.js"
import { loginLimits } from "../../rate-limit/limits.js"
import * as rateLimit from "../../rate-limit/service.js"
import { stillRegistered } from "../rules.js"
import { requestBindingHash } from "./binding.js"
import {
  AccessDenied,
  AuthTransactionExpired,
  AuthTransactionNotFound,
  InvalidTransactionState,
  TransactionNotAuthenticated,
} from "./errors.js"
import * as repo from "./repo.js"
import { requireSocialProof } from "./social-proof.js"
import { withCallSpan } from "../../platform/observability/span.js"

/** Spec, Limits: login transaction lifetime 10 minutes. */
export const TRANSACTION_TTL_MS = 10 * 60_000
/** The authorize -> Hosted Login hand-off token is good for one use within this time. */
export const HANDOFF_TTL_MS = 60_000

export interface CreateTransactionInput {
  readonly client: LoginClient
  readonly redirectUri: string
  readonly codeChallenge: string
  readonly state: string
  readonly nonce: string | undefined
  readonly scopes: ReadonlyArray<string>
  readonly resources: ReadonlyArray<string>
  readonly responseMode: "redirect" | "native_return"
  readonly source: "api" | "authorize"
}

/**
 * Counts a transaction creation (commits on its own): per client address first, so a
 * refused address never eats the client's shared ceiling, then against that ceiling.
 */
export const limitTransactionCreation = Effect.fnUntraced(function* (clientId: string) {
  const config = yield* Config
  const env = yield* CurrentEnvironment
  const request = yield* CurrentRequest
  const limits = loginLimits(config)
  yield* rateLimit.consumeAll(env.record.id, [
    ...rateLimit.addressSteps(limits.transactionsPerIp, request?.ip),
    { limit: limits.transactionsPerClient, subject: clientId },
  ])
})

/**
 * Creates a login transaction in status `created` (docs/architecture.md). For the authorize entry point
 * it also returns the one-time hand-off token whose SHA-256 it stores.
 */
export const createTransaction = Effect.fnUntraced(function* (input: CreateTransactionInput) {
  const ids = yield* Ids
  const crypto = yield* Crypto
  const audit = yield* Audit
  const env = yield* CurrentEnvironment
  const now = yield* Clock.currentTimeMillis
  const id = yield* ids.make("txn")
  const handoffToken = input.source === "authorize" ? yield* crypto.randomToken(32) : undefined
  // The row and its audit record in one statement (atomic without a SQL transaction): one round trip.
  const audited = yield* audit.cte({
    workspaceId: env.record.workspaceId,
    environmentId: env.record.id,
    actor: { type: "system" },
    action: "login.transaction_created",
    subjectType: "auth_transaction",
    subjectId: id,
    details: { client_id: input.client.id, source: input.source, scopes: input.scopes },
  })
  const row = yield* repo
    .insertTransaction(
      {
        id,
        workspaceId: env.record.workspaceId,
        environmentId: env.record.id,
        clientId: input.client.id,
        redirectUri: input.redirectUri,
        codeChallenge: input.codeChallenge,
        state: input.state,
        nonce: input.nonce ?? null,
        scopes: input.scopes,
        resources: input.resources,
        responseMode: input.responseMode,
        source: input.source,
        handoffTokenHash: handoffToken === undefined ? null : sha256Hex(handoffToken),
        handoffExpiresAt: handoffToken === undefined ? null : new Date(now + HANDOFF_TTL_MS),
        now: new Date(now),
        expiresAt: new Date(now + TRANSACTION_TTL_MS),
      },
      audited,
    )
    .pipe(Effect.orDie)
  return { row, handoffToken }
}, withCallSpan("login.createTransaction"))

const isPastExpiry = (row: repo.TransactionRow, now: number) => row.expires_at.getTime() <= now

/**
 * Loads a transaction for a Public API call, enforcing in order: it exists in this
 * Environment; a Hosted Login transaction is driven only by the browser holding its cookie
 * (otherwise it does not exist for the caller: no transaction fixation); the caller's
 * Origin is registered by its client (CORS); it is within its 10 minutes (an active one
 * past them becomes `expired`, which commits, and every use answers 410).
 */
export const loadTransactionForUse = Effect.fnUntraced(function* (transactionId: string) {
  const env = yield* CurrentEnvironment
  const row = yield* repo.transactionById(env.record.id, transactionId).pipe(Effect.orDie)
  if (!row) return yield* new AuthTransactionNotFound({})
  if (row.source === "authorize") {
    // Its cookie lives on the Interaction Domain only; the {issuer}/v1 alias never drives it.
    if (env.via !== "interaction") return yield* new AuthTransactionNotFound({})
    const binding = yield* requestBindingHash
    if (binding === undefined || row.browser_binding_hash === null || binding !== row.browser_binding_hash) {
      return yield* new AuthTransactionNotFound({})
    }
  }
  const client = yield* loginClient(env.record.id, row.client_id)
  if (client) yield* assertOriginAllowedForClient(client)
  const now = yield* Clock.currentTimeMillis
  if (row.status === "expired" || isPastExpiry(row, now)) {
    yield* repo.expireIfDue(env.record.id, row.id, new Date(now)).pipe(Effect.orDie)
    return yield* new AuthTransactionExpired({})
  }
  return row
})

/**
 * After a conditional UPDATE found nothing: explains why, from a fresh read (expired,
 * or in a status the operation does not apply to).
 */
export const explainLostTransition = Effect.fnUntraced(function* <E>(
  transactionId: string,
  onWrongState: () => Effect.Effect<never, E>,
) {
  const env = yield* CurrentEnvironment
  const now = yield* Clock.currentTimeMillis
  const row = yield* repo.transactionById(env.record.id, transactionId).pipe(Effect.orDie)
  if (!row) return yield* new AuthTransactionNotFound({})
  if (row.status === "expired" || isPastExpiry(row, now)) return yield* new AuthTransactionExpired({})
  return yield* onWrongState()
})

/**
 * `created` -> `interaction_started` on the first method call (docs/architecture.md). A transaction
 * already past `created` is left as it is. Commits on its own.
 */
export const markInteractionStarted = Effect.fnUntraced(function* (row: repo.TransactionRow) {
  if (row.status !== "created") return
  const now = yield* Clock.currentTimeMillis
  yield* repo
    .transition(row.environment_id, row.id, ["created"], "interaction_started", new Date(now))
    .pipe(Effect.orDie)
})

/** The GET view (spec: "current status, expiry, available methods, and when applicable method and pending_link"). */
export const presentTransaction = (row: repo.TransactionRow, availableMethods: ReadonlyArray<string>) => ({
  transaction_id: row.id,
  status: row.status,
  expires_at: row.expires_at.toISOString(),
  available_methods: availableMethods,
  ...(row.method !== null ? { method: row.method } : {}),
  ...(row.pending_link !== null && row.pending_link !== undefined ? { pending_link: row.pending_link } : {}),
})

/** `POST .../cancel` moves every active status -> `failed`; it cannot be resumed. */
export const cancelTransaction = Effect.fnUntraced(function* (transactionId: string) {
  const row = yield* loadTransactionForUse(transactionId)
  const audit = yield* Audit
  const sql = yield* SqlClient.SqlClient
  const now = yield* Clock.currentTimeMillis
  const updated = yield* sql
    .withTransaction(
      Effect.gen(function* () {
        const updated = yield* repo.transition(
          row.environment_id,
          row.id,
          repo.ACTIVE_STATUSES,
          "failed",
          new Date(now),
          { failedReason: "cancelled" },
        )
        if (updated) {
          yield* audit.append({
            workspaceId: row.workspace_id,
            environmentId: row.environment_id,
            actor: { type: "end_user", ...(row.user_id ? { id: row.user_id } : {}) },
            action: "login.transaction_cancelled",
            subjectType: "auth_transaction",
            subjectId: row.id,
            details: { client_id: row.client_id },
          })
        }
        return updated
      }),
    )
    .pipe(Effect.orDie)
  if (!updated) {
    return yield* explainLostTransition(row.id, () =>
      Effect.fail(new InvalidTransactionState({ detail: "Only an active transaction can be cancelled" })),
    )
  }
  return updated
}, withCallSpan("login.cancelTransaction"))

type CompleteOutcome =
  | { readonly kind: "issued"; readonly code: string; readonly sessionId: string; readonly row: repo.TransactionRow }
  | { readonly kind: "blocked" }

/** What a completion issued, for a caller's step in the same SQL transaction (Hosted Login's single sign-on). */
export interface IssuedLogin {
  readonly row: repo.TransactionRow
  readonly sessionId: string
  readonly securityVersion: number
}

/**
 * `POST .../complete` (spec: Login transaction, authenticated -> code_issued): only from
 * `authenticated` (else 409 `transaction_not_authenticated`); a custom-UI social login's
 * completion proof (else 400 `invalid_social_proof`, ./social-proof.ts); the redirect URI is checked
 * again against the client's current registration; one conditional UPDATE decides the
 * single winner of concurrent calls; the code, session and events come from
 * `issueAuthorizationCode` in the same SQL transaction.
 */
export const completeTransaction = Effect.fnUntraced(function* <R = never>(
  transactionId: string,
  socialProof: string | undefined,
  afterIssue?: (issued: IssuedLogin) => Effect.Effect<void, never, R>,
) {
  const row = yield* loadTransactionForUse(transactionId)
  if (row.status !== "authenticated" || row.user_id === null || row.method === null || row.authenticated_at === null) {
    return yield* new TransactionNotAuthenticated({
      detail: `The transaction is ${row.status}; it must be authenticated first`,
    })
  }
  yield* requireSocialProof(row, socialProof, "complete")
  const { user_id: userId, method, authenticated_at: authTime } = row
  const sql = yield* SqlClient.SqlClient
  const events = yield* Events
  const audit = yield* Audit
  const crypto = yield* Crypto
  const request = yield* CurrentRequest
  const now = yield* Clock.currentTimeMillis
  const ipHash = ipPrefixHash(crypto, row.workspace_id, request?.ip)
  // The completing request is the person's browser (Hosted Login) or the custom UI's client.
  const httpRequest = yield* Effect.serviceOption(HttpServerRequest.HttpServerRequest)
  const deviceName = deviceNameOf(Option.getOrUndefined(httpRequest)?.headers["user-agent"])

  const outcome: CompleteOutcome = yield* sql.withTransaction(
    Effect.gen(function* () {
      const client = yield* loginClient(row.environment_id, row.client_id)
      if (!stillRegistered(client, row.redirect_uri)) {
        return yield* new InvalidRequest({
          detail: "The client is no longer active or redirect_uri is no longer registered for it",
        })
      }
      // The user row is locked: a block racing this completion either lands first (refused
      // here) or after (its security-version bump makes the new tokens inactive).
      const user = yield* lockUser(row.environment_id, userId).pipe(Effect.orDie)
      if (user?.status !== "active") {
        yield* events.emit({
          type: "login.failed",
          workspaceId: row.workspace_id,
          environmentId: row.environment_id,
          actor: { type: "end_user", id: userId },
          payload: {
            userId,
            method,
            reason: "user_blocked",
            clientId: row.client_id,
            ...(ipHash ? { ipPrefixHash: ipHash } : {}),
          },
        })
        yield* audit.append({
          workspaceId: row.workspace_id,
          environmentId: row.environment_id,
          actor: { type: "end_user", id: userId },
          action: "login.failed",
          subjectType: "user",
          subjectId: userId,
          result: "failure",
          details: { reason: "user_blocked", transaction_id: row.id, client_id: row.client_id },
        })
        return { kind: "blocked" } as const
      }
      const updated = yield* repo
        .transition(row.environment_id, row.id, ["authenticated"], "code_issued", new Date(now))
        .pipe(Effect.orDie)
      if (!updated) {
        return yield* explainLostTransition(row.id, () =>
          Effect.fail(
            new TransactionNotAuthenticated({
              detail: "The transaction is not authenticated (its code may already have been issued)",
            }),
          ),
        )
      }
      const { code, sessionId } = yield* issueAuthorizationCode({
        workspaceId: row.workspace_id,
        environmentId: row.environment_id,
        transactionId: row.id,
        clientId: row.client_id,
        userId,
        securityVersion: user.security_version,
        redirectUri: row.redirect_uri,
        codeChallenge: row.code_challenge,
        scopes: row.scopes,
        resources: row.resources,
        nonce: row.nonce,
        method,
        authTime,
        deviceName,
        ...(ipHash ? { ipPrefixHash: ipHash } : {}),
      })
      if (afterIssue !== undefined)
        yield* afterIssue({ row: updated, sessionId, securityVersion: user.security_version })
      return { kind: "issued", code, sessionId, row: updated } as const
    }),
  )
  if (outcome.kind === "blocked") return yield* new AccessDenied({ detail: "The user is blocked" })
  return outcome
}, withCallSpan("login.completeTransaction"))

/**
 * `code_issued` -> `consumed` when the authorization code is exchanged (docs/architecture.md). For the
 * token endpoint: call it inside the SQL transaction that consumes the code. Returns
 * whether the transaction moved (false when it was not `code_issued`).
 */
export const markTransactionConsumed = Effect.fnUntraced(function* (environmentId: string, transactionId: string) {
  const now = yield* Clock.currentTimeMillis
  return yield* repo.markConsumed(environmentId, transactionId, new Date(now)).pipe(Effect.orDie)
})
