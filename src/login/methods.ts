import { Effect } from "effect"
import { activeSocialProviders } from "../management/connections/repo.js"

/** Order of the social providers in `available_methods` (spec: Social login, provider path segments). */
const PROVIDERS = ["google", "apple", "github", "microsoft", "generic_oidc"] as const

/**
 * `available_methods` (spec: Configuration): `passkey`, `email_otp` and the active social
 * providers (usable connections: active, not deleted, `generic_oidc` only once confirmed;
 * src/management/connections decides), in this order. The Hosted Login page renders one
 * control per entry.
 */
export const availableMethods = (environmentId: string) =>
  Effect.map(
    activeSocialProviders(environmentId),
    (active): ReadonlyArray<string> => ["passkey", "email_otp", ...PROVIDERS.filter((p) => active.includes(p))],
  )
