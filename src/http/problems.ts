import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { CurrentRequest } from "../platform/request-context.js"
import type { OAuthError } from "./errors.js"

export interface ProblemEntry {
  readonly status: number
  readonly code: string
  readonly title: string
}

/**
 * THE table: every typed error (by `_tag`) and the Problem Details it becomes.
 * Nothing else writes error bodies. Features add their errors here: a route's error channel is
 * `Refusal` (below), so a route that can fail with an error missing here does not compile.
 */
export const PROBLEMS = {
  // shared (src/http/errors.ts)
  InvalidRequest: { status: 400, code: "invalid_request", title: "Invalid request" },
  InvalidRequestBody: { status: 400, code: "invalid_request_body", title: "Invalid request body" },
  NotFound: { status: 404, code: "not_found", title: "Not found" },
  MethodNotAllowed: { status: 405, code: "method_not_allowed", title: "Method not allowed" },
  PayloadTooLarge: { status: 413, code: "payload_too_large", title: "Request body too large" },
  UnsupportedMediaType: { status: 415, code: "unsupported_media_type", title: "Unsupported media type" },
  EnvironmentSuspended: { status: 403, code: "environment_suspended", title: "Environment suspended" },
  Unauthorized: { status: 401, code: "unauthorized", title: "Unauthorized" },
  InvalidToken: { status: 401, code: "invalid_token", title: "Invalid token" },
  InsufficientScope: { status: 403, code: "insufficient_scope", title: "Insufficient scope" },
  Forbidden: { status: 403, code: "forbidden", title: "Forbidden" },
  Conflict: { status: 409, code: "conflict", title: "Conflict" },
  PreconditionFailed: { status: 412, code: "precondition_failed", title: "Precondition failed" },
  PreconditionRequired: { status: 428, code: "precondition_required", title: "If-Match required" },
  IdempotencyKeyConflict: {
    status: 409,
    code: "idempotency_key_conflict",
    title: "Idempotency key reused with a different request",
  },
  RateLimited: { status: 429, code: "rate_limited", title: "Too many requests" },
  OriginNotAllowed: { status: 403, code: "origin_not_allowed", title: "Origin not allowed" },
  ServiceUnavailable: { status: 503, code: "service_unavailable", title: "Service unavailable" },
  // webhooks (src/webhooks/errors.ts)
  InvalidWebhookUrl: { status: 400, code: "invalid_request", title: "Webhook URL not allowed" },
  InvalidEventTypes: { status: 400, code: "invalid_request", title: "Invalid event types" },
  WebhookNotFound: { status: 404, code: "not_found", title: "Webhook not found" },
  WebhookDeliveryNotFound: { status: 404, code: "not_found", title: "Webhook delivery not found" },
  // login, front half (src/login/transactions, src/login/email-otp)
  AuthTransactionNotFound: { status: 404, code: "auth_transaction_not_found", title: "Login transaction not found" },
  AuthTransactionExpired: { status: 410, code: "auth_transaction_expired", title: "Login transaction expired" },
  TransactionNotAuthenticated: {
    status: 409,
    code: "transaction_not_authenticated",
    title: "Login transaction not authenticated",
  },
  InvalidTransactionState: {
    status: 409,
    code: "invalid_transaction_state",
    title: "Operation not allowed in the transaction's status",
  },
  AccessDenied: { status: 403, code: "access_denied", title: "Access denied" },
  InvalidSocialProof: { status: 400, code: "invalid_social_proof", title: "Social login proof missing or wrong" },
  InvalidCode: { status: 400, code: "invalid_code", title: "Invalid code" },
  ResendTooSoon: { status: 429, code: "resend_too_soon", title: "Resend too soon" },
  NewUserCreationBlocked: { status: 403, code: "new_user_creation_blocked", title: "New user creation blocked" },
  // passkeys and /me (src/passkeys, src/me)
  WebAuthnVerificationFailed: {
    status: 400,
    code: "webauthn_verification_failed",
    title: "WebAuthn verification failed",
  },
  ReauthenticationRequired: { status: 403, code: "reauthentication_required", title: "Fresh authentication required" },
  BearerTokenMissing: { status: 401, code: "unauthorized", title: "Unauthorized" },
  PasskeyNotFound: { status: 400, code: "passkey_not_found", title: "Passkey not found" },
  IdentityNotFound: { status: 400, code: "identity_not_found", title: "Identity not found" },
  LastFactorDeletionRequiresConfirmation: {
    status: 400,
    code: "last_factor_deletion_requires_confirmation",
    title: "Last authentication method",
  },
  // OIDC issuer, back half (src/oidc/access-token): Bearer failures at UserInfo (and /me)
  AccessTokenRejected: { status: 401, code: "invalid_token", title: "Invalid token" },
  UserUnavailable: { status: 503, code: "user_unavailable", title: "User state temporarily unavailable" },
  // Management users and audit events (src/management/users, src/users)
  UserNotFound: { status: 404, code: "user_not_found", title: "User not found" },
  UserPendingDeletion: { status: 409, code: "user_pending_deletion", title: "User is pending deletion" },
  UserIdentityNotFound: { status: 404, code: "identity_not_found", title: "Identity not found" },
  UserPasskeyNotFound: { status: 404, code: "passkey_not_found", title: "Passkey not found" },
  UserSessionNotFound: { status: 404, code: "session_not_found", title: "Session not found" },
  EmailAlreadyRegistered: { status: 409, code: "email_already_registered", title: "Email already registered" },
  // management core (src/management/workspaces, projects, environments, api-keys)
  SlugTaken: { status: 409, code: "slug_taken", title: "Slug already in use" },
  NoLegacyRpId: { status: 409, code: "no_legacy_rp_id", title: "No legacy RP ID to disable" },
  ScopesExceedCaller: { status: 403, code: "insufficient_scope", title: "Insufficient scope" },
  // management apps (src/management/clients, connections, domains)
  InvalidRedirectUri: { status: 400, code: "invalid_redirect_uri", title: "Invalid redirect URI" },
  ConnectionNotFound: { status: 404, code: "connection_not_found", title: "Connection not found" },
  ConnectionAlreadyExists: { status: 409, code: "connection_already_exists", title: "Connection already exists" },
  DomainAlreadyExists: { status: 409, code: "domain_already_exists", title: "Domain already registered" },
  // user import / export jobs (src/management/user-data-jobs)
  UserDataJobNotFound: { status: 404, code: "job_not_found", title: "Job not found" },
  InvalidSourceUrl: { status: 400, code: "invalid_request", title: "Source URL not allowed" },
  ExportExpired: { status: 410, code: "export_expired", title: "Export download expired" },
  ExportNotReady: { status: 409, code: "export_not_ready", title: "Export not completed" },
  // impersonation (src/management/impersonation)
  ImpersonationDisabled: { status: 403, code: "impersonation_disabled", title: "Impersonation disabled" },
  ImpersonationTargetBlocked: { status: 409, code: "user_blocked", title: "User is blocked" },
  // billing (src/billing)
  BillingNotConfigured: { status: 501, code: "billing_not_configured", title: "Billing is not configured" },
  BillingProviderFailed: { status: 502, code: "billing_provider_error", title: "Payment provider error" },
  BillingWebhookInvalid: { status: 400, code: "invalid_signature", title: "Webhook signature invalid" },
  // bounce intake (src/bounces)
  BounceSourceRejected: { status: 403, code: "bounce_source_rejected", title: "Bounce source not verified" },
  BounceIntakeDisabled: { status: 404, code: "not_found", title: "Not found" },
  DeliveryNotFound: { status: 404, code: "delivery_not_found", title: "Delivery not found" },
  // social login and identity linking (src/social)
  StateMismatch: { status: 400, code: "state_mismatch", title: "Social login state check failed" },
  ProviderUnavailable: { status: 503, code: "provider_unavailable", title: "Identity provider unavailable" },
  InvalidLinkCode: { status: 400, code: "invalid_link_code", title: "Link code unknown, used or expired" },
  IdentityAlreadyLinked: { status: 409, code: "identity_already_linked", title: "Identity linked to another user" },
  ProviderAlreadyLinked: {
    status: 409,
    code: "provider_already_linked",
    title: "An identity of this provider is already linked",
  },
  // Prometheus endpoint (src/platform/observability)
  MetricsTokenRequired: { status: 401, code: "unauthorized", title: "Unauthorized" },
} as const satisfies Readonly<Record<string, ProblemEntry>>

/** The `_tag` of every error the table knows. */
export type ProblemTag = keyof typeof PROBLEMS

/**
 * What a route may fail with: an error the table turns into Problem Details, or an OAuth error
 * body. Anything else a route meets (a database failure, a broken invariant) is a defect,
 * answered 503 when the database refused and 500 otherwise (src/http/app.ts, renderFailure).
 */
export type Refusal = { readonly _tag: ProblemTag } | OAuthError

export const isProblemTag = (tag: string): tag is ProblemTag => Object.hasOwn(PROBLEMS, tag)

/** OAuth error code -> HTTP status (spec: "OAuth error responses"). */
export const OAUTH_STATUS: Readonly<Record<OAuthError["error"], number>> = {
  invalid_request: 400,
  invalid_client: 401,
  invalid_grant: 400,
  invalid_scope: 400,
  access_denied: 403,
  server_error: 503,
  unsupported_grant_type: 400,
  temporarily_unavailable: 503,
  unauthorized_client: 400,
}

export const PROBLEM_TYPE_BASE = "https://authservice.dev/problems/"

/**
 * A Problem Details answer. `extensions` are extension members (RFC 9457 section 3.2), e.g.
 * `limit` of a 429 (the limit that refused).
 */
export const problemResponse = Effect.fnUntraced(function* (
  entry: ProblemEntry,
  detail?: string,
  headers?: Record<string, string>,
  extensions?: Record<string, unknown>,
) {
  const request = yield* CurrentRequest
  return HttpServerResponse.jsonUnsafe(
    {
      type: `${PROBLEM_TYPE_BASE}${entry.code}`,
      title: entry.title,
      status: entry.status,
      code: entry.code,
      request_id: request?.requestId ?? "",
      ...(detail !== undefined ? { detail } : {}),
      ...extensions,
    },
    { status: entry.status, contentType: "application/problem+json", ...(headers ? { headers } : {}) },
  )
})

/** Seconds a client should wait before retrying a 503 (a database restart or outage is short). */
export const STORAGE_RETRY_AFTER_SECONDS = 1

/**
 * A rate-limit refusal at an OAuth endpoint (token, revoke, introspect), as an OAuth error
 * body: 429 `temporarily_unavailable` with `Retry-After`, and the extension member `limit`
 * (RFC 6749 section 5.2 lets a body carry more members; decisions: "Every 429 names its limit").
 */
export const oauthRateLimitedResponse = (limit: string, retryAfterSeconds: number) =>
  HttpServerResponse.jsonUnsafe(
    {
      error: "temporarily_unavailable",
      error_description: "Too many requests; retry after the time in Retry-After",
      limit,
    },
    {
      status: 429,
      headers: { "cache-control": "no-store", "retry-after": String(Math.max(1, Math.ceil(retryAfterSeconds))) },
    },
  )

export const oauthErrorResponse = (error: OAuthError) => {
  const status = OAUTH_STATUS[error.error]
  return HttpServerResponse.jsonUnsafe(
    { error: error.error, error_description: error.description },
    {
      status,
      headers: {
        "cache-control": "no-store",
        // Every 503 says when to retry (RFC 9110 10.2.3), as the Problem Details 503s do.
        ...(status === 503 ? { "retry-after": String(STORAGE_RETRY_AFTER_SECONDS) } : {}),
        ...(error.challenge !== undefined ? { "www-authenticate": error.challenge } : {}),
      },
    },
  )
}
