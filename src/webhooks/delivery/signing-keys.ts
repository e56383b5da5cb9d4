import { createSecretKey, type KeyObject } from "node:crypto"
import { Effect } from "effect"
import { Crypto } from "../../platform/crypto.js"
import { secretSealContext } from "../service.js"
import { BoundedMap } from "../../platform/bounded-map.js"

/**
 * A webhook's signing secret as an HMAC key, opened once per process and sealed value (as the
 * Environment signing keys are decrypted once): opening the AES-GCM seal and preparing the key
 * on every send cost about a tenth of the worker's CPU per delivery in a burst. The key is the
 * secret's UTF-8 bytes (spec: Subscription rule 3, never decoded). A rotation or a master-key
 * re-seal stores a new sealed value, so it is a new entry; old ones age out.
 */
const CAPACITY = 1_000
const keys = new BoundedMap<string, KeyObject>(CAPACITY)

export const webhookSigningKey = Effect.fnUntraced(function* (webhookId: string, sealed: string) {
  const cacheKey = `${webhookId}\n${sealed}`
  const held = keys.get(cacheKey)
  if (held !== undefined) return held
  const crypto = yield* Crypto
  const key = createSecretKey(yield* crypto.open(secretSealContext(webhookId), sealed))
  keys.store(cacheKey, key)
  return key
})
