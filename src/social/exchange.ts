import { Effect } from "effect"
import { describeProviderFailure } from "./fetch.js"
import type { ConnectionRow } from "../management/connections/repo.js"
import { type SocialProfile, applyProfileMapping } from "./profile.js"
import { PROVIDER_ADAPTERS, verifiedEmailClaims } from "./providers/index.js"
import type { SocialStateRow } from "./repo.js"
import { checksOf, providerCall } from "./redirect.js"

/** Why a callback did not yield a user; the provider's own words never reach the browser. */
export type ExchangeFailure =
  | { readonly kind: "provider_error"; readonly error: string }
  | { readonly kind: "exchange_failed" }
  | { readonly kind: "no_subject" }

/**
 * The provider's answer: its refusal (`error`, RFC 6749 section 4.1.2.1), or the code
 * redeemed and validated by the adapter and mapped through the Connection's
 * `profile_mapping`. Every failure is an outcome, not an error: the callers record it.
 */
export const redeemCallback = Effect.fnUntraced(function* (
  connection: ConnectionRow,
  stateRow: SocialStateRow,
  state: string,
  params: URLSearchParams,
) {
  const error = params.get("error")
  if (error !== null) return { ok: false, failure: { kind: "provider_error", error: error.slice(0, 64) } } as const
  const call = yield* providerCall(connection, stateRow.provider_redirect_uri)
  const checks = yield* checksOf(stateRow, state)
  const claims = yield* Effect.tryPromise({
    try: () => PROVIDER_ADAPTERS[connection.provider].exchange(call, checks, params),
    catch: (cause) => cause,
  }).pipe(
    Effect.map((answer) => ({ ok: true, answer }) as const),
    Effect.catch((cause) =>
      Effect.logWarning("social: code exchange failed", connection.provider, describeProviderFailure(cause)).pipe(
        Effect.as({ ok: false } as const),
      ),
    ),
  )
  if (!claims.ok) return { ok: false, failure: { kind: "exchange_failed" } } as const
  const profile: SocialProfile | undefined = applyProfileMapping(
    claims.answer.issuer,
    verifiedEmailClaims(connection.provider, claims.answer.claims),
    connection.profile_mapping,
  )
  if (!profile) return { ok: false, failure: { kind: "no_subject" } } as const
  return { ok: true, profile } as const
})
