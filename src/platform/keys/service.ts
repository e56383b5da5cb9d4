import { createPrivateKey, createPublicKey, type KeyObject } from "node:crypto"
import { Clock, Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { environmentChanged } from "../environment-changes.js"
import { Crypto } from "../crypto.js"
import { generateP256, publicJwkOf, type PublicSigningJwk } from "./jwk.js"
import * as repo from "./repo.js"

/** Tokens signed by a retired key live at most this long (access and ID tokens: 300 s), plus clock skew. */
const TOKEN_LIFETIME_MS = 300_000 + 60_000
/** Retired keys stay on the server this long: an expired ID token is still accepted as id_token_hint. */
const KEEP_RETIRED_MS = 30 * 24 * 3600_000
/** Other replicas notice a rotation within this time; the JWKS body is rebuilt at most this often. */
const CACHE_TTL_MS = 10_000

export interface SigningKey {
  readonly kid: string
  readonly key: KeyObject
  /** Its public half: the very object `verificationKey` answers for `kid` on this process. */
  readonly publicKey: KeyObject
}

export const sealContext = (kid: string) => ({ purpose: "signing-key", table: "signing_keys", rowId: kid })

export class Keys extends Context.Service<
  Keys,
  {
    /** Creates the first key of a new Environment, inside the caller's transaction. */
    readonly create: (environmentId: string) => Effect.Effect<PublicSigningJwk, never, SqlClient.SqlClient>
    /** Retires the active key (kept in the JWKS until its tokens expire) and creates a new one. */
    readonly rotate: (environmentId: string) => Effect.Effect<PublicSigningJwk, never, SqlClient.SqlClient>
    /** Creates the next key, published in the JWKS but not signing yet (one per Environment). */
    readonly stage: (environmentId: string) => Effect.Effect<PublicSigningJwk, never, SqlClient.SqlClient>
    /** Makes the staged key the active one and retires the active one (as `rotate` does). */
    readonly promote: (environmentId: string, kid: string) => Effect.Effect<void, never, SqlClient.SqlClient>
    readonly signingKey: (environmentId: string) => Effect.Effect<SigningKey>
    /** A public key that may verify a token of this Environment (active, or retired and kept). */
    readonly verificationKey: (environmentId: string, kid: string) => Effect.Effect<Option.Option<KeyObject>>
    /** The JWKS document, serialized. */
    readonly jwks: (environmentId: string) => Effect.Effect<string>
  }
>()("platform/Keys") {}

export const KeysLive = Layer.effect(
  Keys,
  Effect.gen(function* () {
    const crypto = yield* Crypto
    const sql = yield* SqlClient.SqlClient
    // Private keys are decrypted once per process; kids are immutable.
    const privateByKid = new Map<string, KeyObject>()
    const publicByKid = new Map<string, { environmentId: string; key: KeyObject; keptUntil: number | null }>()
    const activeByEnv = new Map<string, { key: SigningKey; loadedAt: number }>()
    const jwksByEnv = new Map<string, { body: string; loadedAt: number }>()

    const create = (environmentId: string, status: "next" | "active" = "active") =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const privateKey = generateP256()
        const jwk = yield* Effect.promise(() => publicJwkOf(privateKey))
        const pem = privateKey.export({ format: "pem", type: "pkcs8" }) as string
        const sealed = yield* crypto.seal(sealContext(jwk.kid), pem)
        yield* repo.insertKey({ kid: jwk.kid, environmentId, sealed, jwk, now: new Date(now), status })
        activeByEnv.delete(environmentId)
        jwksByEnv.delete(environmentId)
        environmentChanged(environmentId)
        return jwk
      }).pipe(Effect.orDie)

    const unseal = Effect.fnUntraced(function* (row: repo.SigningKeyRow) {
      const cached = privateByKid.get(row.kid)
      if (cached) return cached
      const pem = yield* crypto.open(sealContext(row.kid), row.private_key_sealed)
      const key = createPrivateKey(pem)
      privateByKid.set(row.kid, key)
      return key
    })

    const signingKey = Effect.fnUntraced(
      function* (environmentId: string) {
        const now = yield* Clock.currentTimeMillis
        const cached = activeByEnv.get(environmentId)
        if (cached && now - cached.loadedAt < CACHE_TTL_MS) return cached.key
        const row = yield* repo.activeKey(environmentId)
        if (!row) return yield* Effect.die(new Error(`Environment ${environmentId} has no active signing key`))
        const privateKey = yield* unseal(row)
        const key = {
          kid: row.kid,
          key: privateKey,
          publicKey: publicKeyObject(environmentId, row.kid, privateKey, now),
        }
        activeByEnv.set(environmentId, { key, loadedAt: now })
        return key
      },
      Effect.provideService(SqlClient.SqlClient, sql),
      Effect.orDie,
    )

    /**
     * One public KeyObject per kid for the life of the process (kids are immutable): the verifier's
     * memory of verified signatures is keyed by that object, so a new object per cache refresh
     * would make every token verify again.
     */
    const publicKeyObject = (environmentId: string, kid: string, privateKey: KeyObject, now: number) => {
      const cached = publicByKid.get(kid)
      if (cached !== undefined && cached.environmentId === environmentId) return cached.key
      const key = createPublicKey(privateKey)
      publicByKid.set(kid, { environmentId, key, keptUntil: now + CACHE_TTL_MS })
      return key
    }

    const retireActive = Effect.fnUntraced(function* (environmentId: string) {
      const now = yield* Clock.currentTimeMillis
      yield* repo.retireActive(
        environmentId,
        new Date(now),
        new Date(now + TOKEN_LIFETIME_MS),
        new Date(now + KEEP_RETIRED_MS),
      )
    })

    return Keys.of({
      create: (environmentId) => create(environmentId),
      rotate: (environmentId) =>
        Effect.gen(function* () {
          yield* retireActive(environmentId)
          return yield* create(environmentId)
        }).pipe(Effect.orDie),
      stage: (environmentId) => create(environmentId, "next"),
      promote: (environmentId, kid) =>
        Effect.gen(function* () {
          yield* retireActive(environmentId)
          yield* repo.promoteNext(environmentId, kid)
          activeByEnv.delete(environmentId)
          jwksByEnv.delete(environmentId)
          environmentChanged(environmentId)
        }).pipe(Effect.orDie),
      signingKey,
      verificationKey: (environmentId, kid) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const cached = publicByKid.get(kid)
          if (
            cached &&
            cached.environmentId === environmentId &&
            (cached.keptUntil === null || cached.keptUntil > now)
          ) {
            return Option.some(cached.key)
          }
          const row = yield* repo.keyByKid(environmentId, kid)
          if (!row || (row.kept_until !== null && row.kept_until.getTime() <= now)) return Option.none()
          const key =
            cached !== undefined && cached.environmentId === environmentId
              ? cached.key
              : createPublicKey({
                  key: { kty: row.public_jwk.kty, crv: row.public_jwk.crv, x: row.public_jwk.x, y: row.public_jwk.y },
                  format: "jwk",
                })
          // An active key's keptUntil is unknown until it is retired: re-read it after the cache TTL.
          publicByKid.set(kid, { environmentId, key, keptUntil: row.kept_until?.getTime() ?? now + CACHE_TTL_MS })
          return Option.some(key)
        }).pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.orDie),
      jwks: (environmentId) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const cached = jwksByEnv.get(environmentId)
          if (cached && now - cached.loadedAt < CACHE_TTL_MS) return cached.body
          const rows = yield* repo.publishedKeys(environmentId, new Date(now))
          const body = JSON.stringify({ keys: rows.map((r) => r.public_jwk) })
          jwksByEnv.set(environmentId, { body, loadedAt: now })
          return body
        }).pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.orDie),
    })
  }),
)
