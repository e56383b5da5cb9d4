import { randomBytes } from "node:crypto"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { base32 } from "../../src/platform/base32.js"
import { Keys } from "../../src/platform/keys/service.js"
import { makeEnvironmentCache } from "../../src/tenancy/environment-cache.js"
import * as repo from "../../src/tenancy/repo.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"

// docs/decisions/rate-limits-and-caches.md: the caches keyed by unauthenticated input (URL environment id, Host) are bounded.
let app: TestApp
let b: Bootstrapped
beforeAll(async () => {
  app = await startApp()
  b = await app.bootstrap()
})
afterAll(async () => {
  await app?.close()
})

const unknownId = () => `env_${base32(randomBytes(20))}`
const options = { capacity: 50, positiveTtl: "5 seconds", negativeTtl: "1 second" } as const

/** Runs with the app's database and a TestClock of its own (the cache reads the caller's clock). */
const withCache = <A>(
  body: (
    cache: Effect.Success<ReturnType<typeof makeEnvironmentCache>>,
  ) => Effect.Effect<A, never, SqlClient.SqlClient>,
) =>
  app.run(
    Effect.gen(function* () {
      const cache = yield* makeEnvironmentCache(options)
      return yield* body(cache)
    }).pipe(Effect.provide(TestClock.layer())),
  )

describe("Environment and host caches", () => {
  it("stay within their capacity under many distinct unknown ids and hosts, and still answer known ones", async () => {
    const sizes = await withCache((cache) =>
      Effect.gen(function* () {
        for (let i = 0; i < 300; i++) {
          expect(yield* cache.environment(unknownId())).toBeUndefined()
          expect(yield* cache.environmentByCustomHost(`nope-${i}.attacker.example`)).toBeUndefined()
        }
        const known = yield* cache.environment(b.environment_id)
        expect(known?.id).toBe(b.environment_id)
        return yield* cache.sizes
      }),
    )
    expect(sizes.environments).toBeLessThanOrEqual(50)
    expect(sizes.hosts).toBeLessThanOrEqual(50)
  })

  it("never looks up or keeps what cannot be an Environment id or a DNS name", async () => {
    const sizes = await withCache((cache) =>
      Effect.gen(function* () {
        expect(yield* cache.environment("env_nope")).toBeUndefined()
        expect(yield* cache.environment("x".repeat(5000))).toBeUndefined()
        expect(yield* cache.environmentByCustomHost(`${"a".repeat(250)}.example`)).toBeUndefined()
        return yield* cache.sizes
      }),
    )
    expect(sizes).toEqual({ environments: 0, hosts: 0 })
  })

  it("a negative answer lasts 1 second; a found Environment 5 seconds (TestClock)", async () => {
    const id = unknownId()
    const seen = await withCache((cache) =>
      Effect.gen(function* () {
        const before = yield* cache.environment(id)
        // The Environment appears in the database (as another replica would create it).
        const sql = yield* SqlClient.SqlClient
        yield* repo
          .insertEnvironment({
            id,
            workspaceId: b.workspace_id,
            projectId: b.project_id,
            type: "test",
            name: "Late",
            now: new Date(),
          })
          .pipe(Effect.orDie)
        yield* TestClock.adjust("999 millis")
        const stillNegative = yield* cache.environment(id)
        yield* TestClock.adjust("1 milli")
        const found = yield* cache.environment(id)
        // A found one is served from the cache for 5 seconds even after a change elsewhere.
        yield* sql`update environments set name = 'Renamed' where id = ${id}`.pipe(Effect.orDie)
        yield* TestClock.adjust("4999 millis")
        const cached = yield* cache.environment(id)
        yield* TestClock.adjust("1 milli")
        const reread = yield* cache.environment(id)
        return { before, stillNegative, found: found?.name, cached: cached?.name, reread: reread?.name }
      }),
    )
    expect(seen).toEqual({
      before: undefined,
      stillNegative: undefined,
      found: "Late",
      cached: "Late",
      reread: "Renamed",
    })
  })
})

describe("the server's Environment cache", () => {
  it("an unknown issuer path is 404 for at most 1 second after the Environment appears", async () => {
    const id = unknownId()
    const discovery = () => app.issuer(id, "/.well-known/openid-configuration")
    expect((await discovery()).status).toBe(404)
    await app.run(
      Effect.gen(function* () {
        yield* repo.insertEnvironment({
          id,
          workspaceId: b.workspace_id,
          projectId: b.project_id,
          type: "test",
          name: "Late",
          now: new Date(),
        })
        yield* (yield* Keys).create(id)
      }).pipe(Effect.orDie),
    )
    await app.advance("1 second")
    expect((await discovery()).status).toBe(200)
  })
})
