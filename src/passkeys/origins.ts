import { type AppConfig, publicPortSuffix } from "../platform/config.js"
import type { EnvironmentUrls } from "../tenancy/schema.js"
import type { CeremonyClientRow } from "./repo.js"

/**
 * `android:apk-key-hash:<base64url of the SHA-256 signing-certificate digest>`: the origin an
 * Android app's WebAuthn calls carry (Android Credential Manager / FIDO2 API), from a
 * fingerprint registered as 32 colon-separated hex pairs.
 */
export const androidOrigin = (fingerprint: string) =>
  `android:apk-key-hash:${Buffer.from(fingerprint.replace(/:/g, ""), "hex").toString("base64url")}`

/**
 * The origins a ceremony accepts in clientDataJSON (spec, Passkey rule 5): the Environment's
 * Interaction Domain; each active Custom Domain enabled as RP; the HTTPS origin of the RP ID
 * chosen for the ceremony; for a `react_native` client, the apk-key-hash origin of each
 * registered Android signing certificate. A Client's `allowed_origins` is CORS-only and is
 * deliberately not consulted here.
 */
export const acceptedOrigins = (input: {
  readonly config: AppConfig
  readonly urls: EnvironmentUrls
  readonly rpId: string
  readonly rpEnabledDomains: ReadonlyArray<string>
  readonly client: CeremonyClientRow | undefined
}): ReadonlyArray<string> => {
  const { config, urls, rpId, rpEnabledDomains, client } = input
  const origins = new Set<string>([urls.interactionOrigin, `https://${rpId}`])
  for (const host of rpEnabledDomains) origins.add(`${config.publicScheme}://${host}${publicPortSuffix(config)}`)
  if (client?.client_type === "react_native") {
    for (const fp of client.mobile_app?.android_sha256_fingerprints ?? []) origins.add(androidOrigin(fp))
  }
  return [...origins]
}
