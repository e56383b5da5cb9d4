import { randomBytes } from "node:crypto"
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { type AppConfig, parseMasterKey } from "./config.js"
import { type Keyring, makeCrypto } from "./crypto.js"

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
  return { current: parseMasterKey(`MASTER_KEY (from ${file})`, readFileSync(file, "utf8").trim()), previous: config.masterKeyPrevious }
}

/**
 * A key-check value in the database refuses a wrong MASTER_KEY at start, before anything
 * is sealed under it. The first start with MASTER_KEY=<new> and MASTER_KEY_PREVIOUS=<old>
 * begins a rotation: the check moves to the new key and remembers the old one, and until
 * `cli master-key rotate` has re-sealed everything (and cleared the old check) a start
 * without the old key is refused, so nothing sealed under it can become unreadable.
 */
export const verifyMasterKey = (keyring: Keyring) => Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const crypto = makeCrypto(keyring)
  const current = crypto.keyCheck(keyring.current)
  const previous = keyring.previous ? crypto.keyCheck(keyring.previous) : undefined
  yield* sql`insert into master_key_check (singleton, check_value) values (true, ${current}) on conflict (singleton) do nothing`
  for (;;) {
    const [row] = yield* sql<{ check_value: string; previous_check_value: string | null }>`select check_value, previous_check_value from master_key_check`
    if (row!.check_value === current) {
      if (row!.previous_check_value === null || row!.previous_check_value === previous) return
      return yield* new MasterKeyMismatch({
        message: "A master-key rotation is not finished: keep MASTER_KEY_PREVIOUS set to the old key until `npm run cli -- master-key rotate` reports it complete",
      })
    }
    if (previous === undefined || row!.check_value !== previous) break
    if (row!.previous_check_value !== null) {
      return yield* new MasterKeyMismatch({
        message: row!.previous_check_value === current
          ? "The rotation to the key given as MASTER_KEY_PREVIOUS has begun: start with that key as MASTER_KEY and this one as MASTER_KEY_PREVIOUS"
          : "An earlier master-key rotation is not finished: complete it (`npm run cli -- master-key rotate`) before starting another",
      })
    }
    // Begin the rotation; a concurrent start may win this compare-and-set: read again.
    yield* sql`update master_key_check set check_value = ${current}, previous_check_value = ${previous}
      where check_value = ${previous} and previous_check_value is null`
  }
  return yield* new MasterKeyMismatch({
    message: "MASTER_KEY does not match the key this database was created with: set the original MASTER_KEY (or pass the old one as MASTER_KEY_PREVIOUS while rotating)",
  })
})
