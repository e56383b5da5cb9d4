import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { Config } from "../platform/config.js"
import { Crypto } from "../platform/crypto.js"
import { Ids } from "../platform/ids.js"
import { Keys } from "../platform/keys/service.js"
import { makeEnvironmentCache } from "./environment-cache.js"
import * as repo from "./repo.js"
import type { EnvironmentRecord } from "./schema.js"

export const API_KEY_PREFIX = "sk_live_"

export const slugify = (name: string) =>
  name
    .toLowerCase()
    .normalize("NFKD")
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 48) || "workspace"

export class Tenancy extends Context.Service<
  Tenancy,
  {
    readonly createWorkspace: (input: {
      name: string
      slug?: string | undefined
    }) => Effect.Effect<{ id: string; slug: string }, never, SqlClient.SqlClient>
    readonly createProject: (input: {
      workspaceId: string
      name: string
      slug?: string | undefined
    }) => Effect.Effect<{ id: string }, never, SqlClient.SqlClient>
    /** Creates the Environment and its first signing key in the caller's transaction. */
    readonly createEnvironment: (input: {
      workspaceId: string
      projectId: string
      type: "test" | "production"
      name: string
    }) => Effect.Effect<{ id: string }, never, SqlClient.SqlClient>
    /** Creates an API key; the secret is returned once and stored only as a SHA-256 hash. */
    readonly createApiKey: (input: {
      workspaceId: string
      environmentId: string | null
      name: string
      scopes: ReadonlyArray<string>
      expiresAt: Date | null
    }) => Effect.Effect<{ id: string; secret: string }, never, SqlClient.SqlClient>
    readonly environment: (id: string) => Effect.Effect<EnvironmentRecord | undefined>
    readonly environmentByCustomHost: (hostname: string) => Effect.Effect<EnvironmentRecord | undefined>
    /** Drops this replica's cached copy after a change. */
    readonly forgetEnvironment: (id: string) => void
  }
>()("tenancy/Tenancy") {}

export const TenancyLive = Layer.effect(
  Tenancy,
  Effect.gen(function* () {
    const ids = yield* Ids
    const keys = yield* Keys
    const crypto = yield* Crypto
    const sql = yield* SqlClient.SqlClient
    yield* Config
    // Other replicas see an Environment change (suspension, custom domain) within the positive TTL (5 s).
    const cache = yield* makeEnvironmentCache()

    const uniqueSlug = Effect.fnUntraced(function* (base: string) {
      for (let i = 0; ; i++) {
        const slug =
          i === 0 ? base : `${base}-${(yield* crypto.randomToken(3)).toLowerCase().replace(/[^a-z0-9]/g, "x")}`
        if (!(yield* repo.slugTaken(slug))) return slug
      }
    })

    return Tenancy.of({
      createWorkspace: (input) =>
        Effect.gen(function* () {
          const id = yield* ids.make("wsp")
          const now = new Date(yield* Clock.currentTimeMillis)
          const slug = input.slug ?? (yield* uniqueSlug(slugify(input.name)))
          yield* repo.insertWorkspace({ id, name: input.name, slug, now })
          return { id, slug }
        }).pipe(Effect.orDie),
      createProject: (input) =>
        Effect.gen(function* () {
          const id = yield* ids.make("prj")
          const now = new Date(yield* Clock.currentTimeMillis)
          yield* repo.insertProject({
            id,
            workspaceId: input.workspaceId,
            name: input.name,
            slug: input.slug ?? slugify(input.name),
            now,
          })
          return { id }
        }).pipe(Effect.orDie),
      createEnvironment: (input) =>
        Effect.gen(function* () {
          const id = yield* ids.make("env")
          const now = new Date(yield* Clock.currentTimeMillis)
          yield* repo.insertEnvironment({ id, ...input, now })
          yield* keys.create(id)
          return { id }
        }).pipe(Effect.orDie),
      createApiKey: (input) =>
        Effect.gen(function* () {
          const id = yield* ids.make("mky")
          const secret = `${API_KEY_PREFIX}${yield* crypto.randomToken(32)}`
          const now = new Date(yield* Clock.currentTimeMillis)
          yield* repo.insertApiKey({ id, ...input, secretHash: crypto.sha256Hex(secret), now })
          return { id, secret }
        }).pipe(Effect.orDie),
      environment: (id) => cache.environment(id).pipe(Effect.provideService(SqlClient.SqlClient, sql)),
      environmentByCustomHost: (hostname) =>
        cache.environmentByCustomHost(hostname).pipe(Effect.provideService(SqlClient.SqlClient, sql)),
      forgetEnvironment: cache.forget,
    })
  }),
)
