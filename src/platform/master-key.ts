import { randomBytes } from "node:crypto"
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { Clock, Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { type AppConfig, parseMasterKey } from "./config.js"
import type { CryptoShape, Keyring } from "./crypto.js"
import { type ProcessRegistration, recordBeat } from "./process-heartbeat.js"

export class MasterKeyMismatch extends Schema.TaggedError<MasterKeyMismatch>()("MasterKeyMismatch", {
  message: Schema.String,
}) {}

/**
 * MASTER_KEY from configuration; in development without one, a key generated once
 * into DATA_DIR (mode 0600) so restarts can still decrypt what was sealed.
 */
export const loadKeyring = (config: AppConfig): Keyring => {
  if (config.masterKey) return { current: config.masterKey, previous: config.masterKeyPrevious }
  const dir = resolve(config.dataDir)
  const file = join(dir, "master.key")
  if (!existsSync(file)) {
    mkdirSync(dir, { recursive: true })
    writeFileSync(file, randomBytes(32).toString("base64url") + "\n", { mode: 0o600 })
    chmodSync(file, 0o600)
  }
  return {
    current: parseMasterKey(`MASTER_KEY (from ${file})`, readFileSync(file, "utf8").trim()),
    previous: config.masterKeyPrevious,
  }
}

/** The key-check row (sql/0001, 0096, 0174). */
export interface KeyCheckRow {
  readonly check_value: string
  /** Set from the switch of a rotation (`master-key rotate`) until it completes: the old key's check. */
  readonly previous_check_value: string | null
  /** Set when a rotation completed: until then a start without MASTER_KEY_PREVIOUS is refused. */
  readonly old_key_needed_until: Date | null
}

/** Which key a process seals and makes HMACs under (src/platform/crypto.ts). */
export type SealingKey = "master-key" | "previous-key"

export type KeyCheckDecision =
  | { readonly kind: "ready"; readonly sealWith: SealingKey }
  | { readonly kind: "refuse"; readonly message: string }

const refuse = (message: string): KeyCheckDecision => ({ kind: "refuse", message })

/**
 * What a process holding keys with checks `current` / `previous` may do against the key-check row
 * (docs/master-key-rotation.md, whose steps these refusals name): the rule as a pure function.
 *
 * Expand/contract (decisions: Production operation, "A rotation never breaks the running service"):
 * a start with MASTER_KEY=<new> and MASTER_KEY_PREVIOUS=<the database's key> records nothing and
 * seals under the old key, so the processes not restarted yet read all it writes; once
 * `master-key rotate` has recorded the switch (the check moved to the new key, the old one kept
 * as previous) a start seals under the new key at once, and one with the old key only is refused.
 */
export const keyCheckDecision = (
  row: KeyCheckRow,
  current: string,
  previous: string | undefined,
  options: { readonly nowMs: number },
): KeyCheckDecision => {
  if (row.check_value === current) {
    if (row.previous_check_value !== null) {
      return row.previous_check_value === previous
        ? { kind: "ready", sealWith: "master-key" }
        : refuse(
            "A master-key rotation is not finished: keep MASTER_KEY_PREVIOUS set to the old key until `npm run cli -- master-key rotate` reports it complete",
          )
    }
    const until = row.old_key_needed_until
    if (previous === undefined && until !== null && until.getTime() > options.nowMs) {
      return refuse(
        `The master-key rotation completed, but Email OTP codes and social login states made under the old key verify only with it until ${until.toISOString()}: keep MASTER_KEY_PREVIOUS set to the old key until then (step 4)`,
      )
    }
    return { kind: "ready", sealWith: "master-key" }
  }
  if (previous !== undefined && row.check_value === previous) {
    if (row.previous_check_value !== null) {
      return refuse(
        row.previous_check_value === current
          ? "The database has switched to the key given as MASTER_KEY_PREVIOUS (`master-key rotate`): start with that key as MASTER_KEY and this one as MASTER_KEY_PREVIOUS"
          : "An earlier master-key rotation is not finished: complete it (`npm run cli -- master-key rotate`) before starting another",
      )
    }
    return { kind: "ready", sealWith: "previous-key" }
  }
  if (row.previous_check_value === current) {
    return refuse(
      "A master-key rotation away from this MASTER_KEY has switched to the new key (`master-key rotate`): start with the new key as MASTER_KEY and this one as MASTER_KEY_PREVIOUS (step 2)",
    )
  }
  return refuse(
    "MASTER_KEY does not match the key this database was created with: set the original MASTER_KEY (or pass the old one as MASTER_KEY_PREVIOUS while rotating)",
  )
}

export interface VerifyMasterKeyOptions {
  /**
   * Recorded in process_heartbeats in the key check's own transaction, under the lock of the
   * key-check row: a process is visible to `master-key rotate` before it can seal anything, with
   * the key it seals under, and the rotation's check of the live processes and its switch (which
   * take the same lock) cannot miss one that passed its key check a moment earlier.
   */
  readonly register?: ProcessRegistration
}

/**
 * A key-check value in the database refuses a wrong MASTER_KEY at start, before anything is
 * sealed under it, and tells a process holding both keys which one to seal under (keyCheckDecision):
 * `crypto` is switched to MASTER_KEY here when the database has switched. Until
 * `cli master-key rotate` has re-sealed everything (and cleared the old check) a start without the
 * old key is refused, so nothing sealed under it can become unreadable; so is one for 10 minutes
 * after it completed.
 */
export const verifyMasterKey = (crypto: CryptoShape, options: VerifyMasterKeyOptions = {}) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const current = crypto.keyCheck()
    const previous = crypto.previousKey ? crypto.keyCheck(crypto.previousKey) : undefined
    const nowMs = yield* Clock.currentTimeMillis
    return yield* sql.withTransaction(
      Effect.gen(function* () {
        yield* sql`insert into master_key_check (singleton, check_value) values (true, ${current}) on conflict (singleton) do nothing`
        const [row] =
          yield* sql<KeyCheckRow>`select check_value, previous_check_value, old_key_needed_until from master_key_check for update`
        const decision = keyCheckDecision(row!, current, previous, { nowMs })
        if (decision.kind === "refuse") return yield* new MasterKeyMismatch({ message: decision.message })
        if (decision.sealWith === "master-key") crypto.sealUnderMasterKey()
        if (options.register) yield* recordBeat(options.register, crypto.sealingKeyId())
        return decision.sealWith
      }),
    )
  })
