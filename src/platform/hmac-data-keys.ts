import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { createHmac } from "node:crypto"
import { Crypto, deriveKey, type SealContext } from "./crypto.js"

/**
 * HMAC keys for values that must stay comparable across master-key rotations (docs/master-key-rotation.md;
 * docs/master-key-rotation.md, sql/0164). A key derived from MASTER_KEY changes with it, so a
 * hash stored before a rotation (a hard-bounced address's suppression, the memory of an
 * address that signed in) could no longer be found after it. These purposes use a random data
 * key instead, stored sealed under the master key and re-sealed by the rotation; short-lived
 * HMACs (OTP codes, rate-limit windows, challenge issuers) keep keys derived from the master key.
 */
export type DataKeyPurpose =
  /** `recipientHash` of mail deliveries, bounce suppressions and `email.delivery.bounced`. */
  | "email-recipient"
  /** Remembered facts of the login rate limits (an address that signed in as an email, 30 days). */
  | "rate-limit-memory"

/** The data key's seal is bound to its purpose and row. */
export const dataKeySealContext = (purpose: string): SealContext => ({
  purpose: "hmac-data-key",
  table: "hmac_data_keys",
  rowId: purpose,
})

export class HmacDataKeys extends Context.Service<
  HmacDataKeys,
  {
    /** HMAC-SHA256 of `data` under the key derived (HKDF, `info`) from the purpose's data key. */
    readonly hmac: (purpose: DataKeyPurpose, info: string, data: string) => Effect.Effect<Buffer>
  }
>()("platform/HmacDataKeys") {}

export const HmacDataKeysLive = Layer.effect(
  HmacDataKeys,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const crypto = yield* Crypto
    // Opened keys never change (a rotation re-seals the same key), so this process keeps them.
    const opened = new Map<DataKeyPurpose, Buffer>()

    const stored = (purpose: DataKeyPurpose) =>
      Effect.map(
        sql<{ key_sealed: string }>`select key_sealed from hmac_data_keys where purpose = ${purpose}`,
        (rows) => rows[0]?.key_sealed,
      )

    /**
     * The purpose's key. One found already stored is kept in memory. Otherwise it is created
     * (of concurrent first uses, on any replica, one insert wins and every one reads that key)
     * and used but not kept yet: the caller may be inside a transaction that rolls back, which
     * takes the new key and everything hashed with it along; the next use reads it again.
     */
    const key = Effect.fnUntraced(function* (purpose: DataKeyPurpose) {
      const held = opened.get(purpose)
      if (held !== undefined) return held
      const existing = yield* stored(purpose)
      if (existing !== undefined) {
        const k = yield* crypto.open(dataKeySealContext(purpose), existing)
        opened.set(purpose, k)
        return k
      }
      const fresh = yield* crypto.seal(dataKeySealContext(purpose), yield* crypto.randomBytes(32))
      yield* sql`insert into hmac_data_keys (purpose, key_sealed, created_at)
      values (${purpose}, ${fresh}, ${new Date(yield* Clock.currentTimeMillis)}) on conflict (purpose) do nothing`
      return yield* crypto.open(dataKeySealContext(purpose), (yield* stored(purpose))!)
    }, Effect.orDie)

    return HmacDataKeys.of({
      hmac: (purpose, info, data) =>
        Effect.map(key(purpose), (k) => createHmac("sha256", deriveKey(k, info)).update(data).digest()),
    })
  }),
)
