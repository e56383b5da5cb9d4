import { Context, Effect, Layer } from "effect"
import { base32 } from "./base32.js"
import { Crypto } from "./crypto.js"

/** The spec's prefixed identifiers: prefix + 32 characters of [a-z2-7] (20 random bytes). */
export type IdPrefix =
  | "evt"
  | "usr"
  | "idn"
  | "psk"
  | "ses"
  | "cli"
  | "dlv"
  | "wsp"
  | "env"
  | "prj"
  | "mky"
  | "con"
  | "dom"
  | "whk"
  | "job"
  | "aud"
  | "fam"
  | "txn"
  | "chl"
  | "req"
  | "imp"
  | "sig"
  | "dsh"
  | "hls"

export const ID_PATTERN = (prefix: IdPrefix) => new RegExp(`^${prefix}_[a-z2-7]{32}$`)

export class Ids extends Context.Service<
  Ids,
  {
    readonly make: (prefix: IdPrefix) => Effect.Effect<string>
  }
>()("platform/Ids") {}

export const IdsLive = Layer.effect(
  Ids,
  Effect.gen(function* () {
    const crypto = yield* Crypto
    return Ids.of({
      make: (prefix) => Effect.map(crypto.randomBytes(20), (bytes) => `${prefix}_${base32(bytes)}`),
    })
  }),
)
