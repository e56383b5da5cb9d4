import { Effect } from "effect"
import { CurrentEnvironment } from "../../tenancy/current-environment.js"
import { InvalidRequest } from "../../http/errors.js"
import { loginClient } from "../clients.js"
import { assertOriginAllowedForClient } from "../../http/cors/client-origins.js"
import { availableMethods } from "../methods.js"
import { environmentTheme } from "./repo.js"

/**
 * `sdk_compatibility_version` (spec, Versioning rule 3; format not shown): semantic
 * versioning of the Public API contract SDKs are written against. An SDK supports a server
 * whose major equals its own and whose minor is at least the one it needs.
 */
export const SDK_COMPATIBILITY_VERSION = "1.0.0"

const urlOrNull = (value: unknown) =>
  typeof value === "string" && /^https:\/\//.test(value) && URL.canParse(value) ? value : null

/**
 * `legal` (shape not shown): `{terms_url, privacy_url}`, each an https URL or null, read from
 * the theme object's `terms_url` / `privacy_url` when the theme sets them.
 */
export const legalOf = (theme: Record<string, unknown>) => ({
  terms_url: urlOrNull(theme["terms_url"]),
  privacy_url: urlOrNull(theme["privacy_url"]),
})

/**
 * GET /config (spec: Configuration). The Environment comes from the host; `client_id` must
 * be an active client of it (else 400 `invalid_request`). Nothing secret is returned: no
 * provider credentials, no client settings beyond what a login page needs.
 */
export const loginConfig = Effect.fnUntraced(function* (clientId: string) {
  const env = yield* CurrentEnvironment
  const client = yield* loginClient(env.record.id, clientId)
  if (client?.status !== "active") {
    return yield* new InvalidRequest({ detail: "client_id is not an active client of this Environment" })
  }
  yield* assertOriginAllowedForClient(client)
  const theme = yield* environmentTheme(env.record.id)
  return {
    issuer: env.urls.issuer,
    rp_id: env.urls.rpId,
    available_methods: yield* availableMethods(env.record.id),
    theme,
    sdk_compatibility_version: SDK_COMPATIBILITY_VERSION,
    legal: legalOf(theme),
  }
})
