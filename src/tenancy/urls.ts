import { type AppConfig, publicPortSuffix } from "../platform/config.js"
import type { EnvironmentRecord, EnvironmentUrls } from "./schema.js"

/** `env-<id without env_>.login.{PLATFORM_DOMAIN}` (spec: default Interaction Domain). */
export const defaultInteractionHost = (config: AppConfig, environmentId: string) =>
  `env-${environmentId.replace(/^env_/, "")}.login.${config.platformDomain}`

export const issuerOf = (config: AppConfig, environmentId: string) =>
  `${config.publicScheme}://${config.canonicalIssuerHost}/e/${environmentId}`

/** Public URLs come from configuration and the domains table, never from the request's Host. */
export const environmentUrls = (config: AppConfig, env: EnvironmentRecord): EnvironmentUrls => {
  const host = env.customDomain ?? defaultInteractionHost(config, env.id)
  const interactionDomain = `${host}${publicPortSuffix(config)}`
  return {
    issuer: issuerOf(config, env.id),
    interactionDomain,
    interactionOrigin: `${config.publicScheme}://${interactionDomain}`,
    rpId: env.activeRpId ?? host,
  }
}
