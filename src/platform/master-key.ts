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
 * is sealed under it. During a rotation the previous key's check is accepted and replaced.
 */
export const verifyMasterKey = (keyring: Keyring) => Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const crypto = makeCrypto(keyring)
  const current = crypto.keyCheck(keyring.current)
  yield* sql`insert into master_key_check (singleton, check_value) values (true, ${current}) on conflict (singleton) do nothing`
  const [row] = yield* sql<{ check_value: string }>`select check_value from master_key_check`
  if (row!.check_value === current) return
  if (keyring.previous && row!.check_value === crypto.keyCheck(keyring.previous)) {
    yield* sql`update master_key_check set check_value = ${current}`
    return
  }
  return yield* new MasterKeyMismatch({
    message: "MASTER_KEY does not match the key this database was created with: set the original MASTER_KEY (or pass the old one as MASTER_KEY_PREVIOUS while rotating)",
  })
})
