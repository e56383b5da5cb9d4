import type { EnvironmentRecord } from "./schema.js"

/**
 * The passkey RP ID migration (spec: Domain, Environment `rp_id`, rp-migration): how the RP ID
 * follows the Interaction Domain. Passkeys are bound to the RP ID they were made under, so a
 * move keeps the previous RP ID as the legacy one until `disable-legacy`. The RP IDs are the
 * Environment's state (environments.active_rp_id / legacy_rp_id / legacy_rp_disabled_at), moved
 * by management/domains/ and read by passkeys/, so the rule lives with the Environment.
 */
export interface RpState {
  readonly activeRpId: string
  readonly legacyRpId: string | null
  readonly legacyRpDisabledAt: Date | null
}

/**
 * The RP state once `interactionHost` serves as the Interaction Domain, or undefined when
 * the active RP ID is already that host.
 * - The previous active RP ID is still served (the default host, or another active custom
 *   domain): the new host becomes active and the previous one legacy (a new migration).
 * - The previous active RP ID is no longer served (its domain was deleted or lost
 *   `rp_enabled`): the new host becomes active; a legacy RP ID equal to it is no longer
 *   legacy, any other legacy RP ID stays as it was.
 */
export const nextRpState = (
  before: RpState,
  interactionHost: string,
  previousStillServed: boolean,
): RpState | undefined => {
  if (before.activeRpId === interactionHost) return undefined
  if (previousStillServed)
    return { activeRpId: interactionHost, legacyRpId: before.activeRpId, legacyRpDisabledAt: null }
  const legacyReturns = before.legacyRpId === interactionHost
  return {
    activeRpId: interactionHost,
    legacyRpId: legacyReturns ? null : before.legacyRpId,
    legacyRpDisabledAt: legacyReturns ? null : before.legacyRpDisabledAt,
  }
}

/** The legacy RP ID while it is still usable (until disable-legacy, which is irreversible). */
export const liveLegacyRpId = (
  env: Pick<EnvironmentRecord, "legacyRpId" | "legacyRpDisabledAt">,
): string | undefined => (env.legacyRpId !== null && env.legacyRpDisabledAt === null ? env.legacyRpId : undefined)
