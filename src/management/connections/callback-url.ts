import type { EnvironmentUrls } from "../../tenancy/schema.js"
import type { ConnectionRow } from "./repo.js"

/**
 * Where the provider sends the browser back (spec: Social login rule 3): managed connections
 * to the Canonical Issuer, BYO connections to the Environment's Interaction Domain. The
 * Connection's `callback_url` and social login's `redirect_uri` are this one value.
 */
export const connectionCallbackUrl = (
  urls: Pick<EnvironmentUrls, "issuer" | "interactionOrigin">,
  row: Pick<ConnectionRow, "mode" | "provider">,
) => {
  const base = row.mode === "managed" ? `${urls.issuer}/v1` : `${urls.interactionOrigin}/v1`
  return `${base}/auth/social/${row.provider}/callback`
}
