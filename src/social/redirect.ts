import { Clock, Effect } from "effect"
import { CurrentEnvironment } from "../tenancy/current-environment.js"
import { connectionCallbackUrl } from "../management/connections/callback-url.js"
import { ConnectionNotFound } from "../management/connections/errors.js"
import { type ConnectionRow, usableConnection } from "../management/connections/repo.js"
import { Providers, type Provider } from "../management/connections/schema.js"
import { openProviderClientSecret } from "../management/connections/secret.js"
import { InvalidRequest } from "../http/errors.js"
import { Config } from "../platform/config.js"
import { Crypto } from "../platform/crypto.js"
import { ProviderUnavailable } from "./errors.js"
import { ProviderDiscoveryCache } from "./provider-discovery-cache.js"
import { describeProviderFailure, providerFetch } from "./fetch.js"
import { currentTraceparent } from "../platform/observability/trace-context.js"
import { PROVIDER_ADAPTERS } from "./providers/index.js"
import type { AuthorizationChecks, ProviderCall } from "./providers/types.js"
import * as repo from "./repo.js"
import { signState } from "./state.js"

/** A state lives as long as a login transaction may (spec, Limits: 10 minutes). */
export const STATE_TTL_MS = 10 * 60_000

/** The provider path segment (spec: Social login, "Provider path segments"); anything else is 400. */
export const parseProvider = (raw: string) =>
  (Providers as ReadonlyArray<string>).includes(raw)
    ? Effect.succeed(raw as Provider)
    : Effect.fail(new InvalidRequest({ detail: `provider must be one of ${Providers.join(", ")}` }))

/** The usable Connection of a provider (active; generic OIDC also owner-confirmed), else 404 `connection_not_found`. */
export const requireUsableConnection = (environmentId: string, provider: Provider) =>
  Effect.flatMap(usableConnection(environmentId, provider), (row) =>
    row
      ? Effect.succeed(row)
      : Effect.fail(new ConnectionNotFound({ detail: `This Environment has no active ${provider} connection` })),
  )

/** One outbound provider call's context: the opened secret, the SSRF-guarded fetch, the Clock, the discovery cache. */
export const providerCall = Effect.fnUntraced(function* (connection: ConnectionRow, redirectUri: string) {
  const config = yield* Config
  const secret = yield* openProviderClientSecret(connection).pipe(Effect.orDie)
  return {
    connection,
    clientSecret: secret ?? "",
    redirectUri,
    fetch: providerFetch({
      allowPrivateTargets: config.webhookAllowPrivateTargets,
      hosts: config.socialProviderHosts,
      traceparent: yield* currentTraceparent,
    }),
    nowMs: yield* Clock.currentTimeMillis,
    discovery: yield* ProviderDiscoveryCache,
  } satisfies ProviderCall
})

export const verifierSealContext = (stateId: string) => ({
  purpose: "social-pkce-verifier",
  table: "social_states",
  rowId: stateId,
})

export interface RedirectInput {
  readonly kind: "login" | "link"
  readonly connection: ConnectionRow
  readonly transactionId?: string
  readonly userId?: string
  readonly clientId?: string
  /** A link: the session that started it (the confirm must come from it). */
  readonly sessionId?: string
  readonly linkRedirectUri?: string
  /** The state never outlives this (a login transaction's own expiry). */
  readonly notAfterMs?: number
}

/**
 * Prepares one redirect to the provider: fresh state reference, PKCE verifier and nonce
 * (256 bits each), the signed `state`, and the provider's authorization URL. Returns the
 * URL and an Effect that stores the state row, to run in the caller's SQL transaction
 * (the state exists iff the caller's change commits). A provider that cannot be reached
 * fails with 503 `provider_unavailable` before anything is stored.
 */
export const prepareRedirect = Effect.fnUntraced(function* (input: RedirectInput) {
  const env = yield* CurrentEnvironment
  const crypto = yield* Crypto
  const now = yield* Clock.currentTimeMillis
  const reference = yield* crypto.randomToken(32)
  const checks: AuthorizationChecks = {
    state: signState(crypto, env.record.id, reference, Math.min(now + STATE_TTL_MS, input.notAfterMs ?? Infinity)),
    nonce: yield* crypto.randomToken(32),
    codeVerifier: yield* crypto.randomToken(32),
  }
  const redirectUri = connectionCallbackUrl(env.urls, input.connection)
  const call = yield* providerCall(input.connection, redirectUri)
  const url = yield* Effect.tryPromise({
    try: () => PROVIDER_ADAPTERS[input.connection.provider].authorizationUrl(call, checks),
    catch: (cause) => cause,
  }).pipe(
    Effect.catch((cause) =>
      Effect.logWarning("social: authorization URL failed", describeProviderFailure(cause)).pipe(
        Effect.andThen(
          Effect.fail(
            new ProviderUnavailable({
              detail: `The ${input.connection.provider} provider could not be reached; try again`,
            }),
          ),
        ),
      ),
    ),
  )
  const store = Effect.gen(function* () {
    yield* repo
      .insertState({
        id: reference,
        workspaceId: env.record.workspaceId,
        environmentId: env.record.id,
        kind: input.kind,
        provider: input.connection.provider,
        connectionId: input.connection.id,
        transactionId: input.transactionId ?? null,
        userId: input.userId ?? null,
        clientId: input.clientId ?? null,
        sessionId: input.sessionId ?? null,
        linkRedirectUri: input.linkRedirectUri ?? null,
        providerRedirectUri: redirectUri,
        codeVerifierSealed: yield* crypto.seal(verifierSealContext(reference), checks.codeVerifier),
        nonce: checks.nonce,
        now: new Date(now),
        expiresAt: new Date(now + STATE_TTL_MS),
      })
      .pipe(Effect.orDie)
  })
  return { url: url.href, store }
})

/** The checks of a used state, re-assembled for the code exchange. */
export const checksOf = Effect.fnUntraced(function* (row: repo.SocialStateRow, state: string) {
  const crypto = yield* Crypto
  const verifier = yield* crypto.open(verifierSealContext(row.id), row.code_verifier_sealed).pipe(Effect.orDie)
  return { state, nonce: row.nonce, codeVerifier: verifier.toString("utf8") } satisfies AuthorizationChecks
})
