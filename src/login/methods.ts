import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Order of the social providers in `available_methods` (spec: Social login, provider path segments). */
const PROVIDERS = ["google", "apple", "github", "microsoft", "generic_oidc"] as const

/**
 * Providers with an active connection in the Environment (spec: "Only providers with an
 * active connection in the Environment can start"). A `generic_oidc` connection counts only
 * once the Workspace Owner confirmed it (spec: Connection).
 */
export const activeSocialProviders = (environmentId: string) => SqlClient.SqlClient.use((sql) =>
  sql<{ provider: string }>`select distinct provider from connections
    where environment_id = ${environmentId} and status = 'active' and deleted_at is null
      and (provider <> 'generic_oidc' or owner_confirmed)`)
  .pipe(
    Effect.map((rows) => PROVIDERS.filter((p) => rows.some((r) => r.provider === p))),
    Effect.orDie,
  )

/**
 * `available_methods` (spec: Configuration): `passkey`, `email_otp` and the active social
 * providers, in this order. The Hosted Login page renders one control per entry.
 */
export const availableMethods = (environmentId: string) =>
  Effect.map(activeSocialProviders(environmentId), (providers): ReadonlyArray<string> => ["passkey", "email_otp", ...providers])
