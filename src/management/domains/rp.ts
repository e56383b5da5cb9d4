/**
 * How the RP ID follows the Interaction Domain (docs/architecture.md, Decisions; spec: Domain, Environment
 * `rp_id`, rp-migration). Passkeys are bound to the RP ID they were made under, so a move
 * keeps the previous RP ID as the legacy one until `disable-legacy`.
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
export const nextRpState = (before: RpState, interactionHost: string, previousStillServed: boolean): RpState | undefined => {
  if (before.activeRpId === interactionHost) return undefined
  if (previousStillServed) return { activeRpId: interactionHost, legacyRpId: before.activeRpId, legacyRpDisabledAt: null }
  const legacyReturns = before.legacyRpId === interactionHost
  return {
    activeRpId: interactionHost,
    legacyRpId: legacyReturns ? null : before.legacyRpId,
    legacyRpDisabledAt: legacyReturns ? null : before.legacyRpDisabledAt,
  }
}
