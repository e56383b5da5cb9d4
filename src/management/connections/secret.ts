import { Effect } from "effect"
import { Crypto } from "../../platform/crypto.js"
import type { ConnectionRow } from "./repo.js"

/** The secret box context of a provider client secret: it opens only on its own row. */
export const sealContext = (connectionId: string) => ({
  purpose: "connection-provider-client-secret",
  table: "connections",
  rowId: connectionId,
})

/** Provider client secrets are used, not just verified, so they are sealed (docs/architecture.md, Security model). */
export const sealProviderClientSecret = Effect.fnUntraced(function* (connectionId: string, secret: string) {
  const crypto = yield* Crypto
  return yield* crypto.seal(sealContext(connectionId), secret)
})

/** The plain provider client secret, for the token request to the provider (social login). */
export const openProviderClientSecret = Effect.fnUntraced(function* (
  row: Pick<ConnectionRow, "id" | "provider_client_secret_sealed">,
) {
  if (row.provider_client_secret_sealed === null) return undefined
  const crypto = yield* Crypto
  const plain = yield* crypto.open(sealContext(row.id), row.provider_client_secret_sealed)
  return plain.toString("utf8")
})
