import { Effect } from "effect"
import { InvalidRequest } from "../http/errors.js"
import { liveLegacyRpId } from "../tenancy/rp-migration.js"
import type { EnvironmentRecord, EnvironmentUrls } from "../tenancy/schema.js"
import type { CeremonyClientRow } from "./repo.js"

// Which RP ID a ceremony runs under (spec: Passkey section, "optional `rp` (active / legacy) or
// `rp_id`, not both"; the RP migration's legacy RP ID: src/tenancy/rp-migration.ts).

export interface RpRequest {
  readonly rp?: "active" | "legacy" | undefined
  readonly rp_id?: string | undefined
}

/**
 * RP IDs a native app may name with `rp_id` (docs/decisions/passkeys.md): the Environment's active
 * RP ID, or the host its registration declares for Universal Links / App Links
 * (`mobile_app.universal_link_host`, the domain its associated-domains file is served from);
 * for authentication also the live legacy RP ID. Only a `react_native` client may send it.
 */
const nativeRpId = (
  urls: EnvironmentUrls,
  env: EnvironmentRecord,
  client: CeremonyClientRow | undefined,
  rpId: string,
  ceremony: "registration" | "authentication",
) => {
  if (client?.client_type !== "react_native") {
    return Effect.fail(new InvalidRequest({ detail: "rp_id is only accepted for react_native clients" }))
  }
  const allowed = [
    urls.rpId,
    client.mobile_app?.universal_link_host ?? undefined,
    ceremony === "authentication" ? liveLegacyRpId(env) : undefined,
  ]
  return allowed.includes(rpId)
    ? Effect.succeed(rpId)
    : Effect.fail(
        new InvalidRequest({ detail: "rp_id must be the Environment's RP ID or the client's universal_link_host" }),
      )
}

export const chooseRpId = (input: {
  readonly env: EnvironmentRecord
  readonly urls: EnvironmentUrls
  readonly client: CeremonyClientRow | undefined
  readonly request: RpRequest
  readonly ceremony: "registration" | "authentication"
}): Effect.Effect<string, InvalidRequest> => {
  const { env, urls, client, request, ceremony } = input
  if (request.rp !== undefined && request.rp_id !== undefined) {
    return Effect.fail(new InvalidRequest({ detail: "Send rp or rp_id, not both" }))
  }
  if (request.rp_id !== undefined) return nativeRpId(urls, env, client, request.rp_id, ceremony)
  if (request.rp === "legacy") {
    const legacy = liveLegacyRpId(env)
    if (legacy === undefined) {
      return Effect.fail(
        new InvalidRequest({
          detail:
            env.legacyRpId === null ? "The Environment has no legacy RP ID" : "The legacy RP ID has been disabled",
        }),
      )
    }
    return Effect.succeed(legacy)
  }
  return Effect.succeed(urls.rpId)
}
