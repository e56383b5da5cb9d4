import { connect, createServer, type Socket } from "node:net"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { LIVE_STATE_CACHE, makeLiveStateCache } from "../../src/oidc/access-token/live-cache.js"
import { LISTEN_ANSWER_MS, LISTEN_HEARTBEAT_MS } from "../../src/platform/bounded-pg-client.js"
import { DatabaseUrl, SqlLive } from "../../src/platform/database.js"
import { liveStateChanged } from "../../src/platform/live-state-changes.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { createClient, createUser, exchangeCode, mintCode, queryRows, type TestClient, userinfo } from "./support.js"

// The live-state memory keeps expiry times, not verdicts (src/oidc/access-token/live-cache.ts):
// an earlier expiry is announced and applies; a later one is not announced (sql/0140), so a
// remembered expiry that has passed is read again instead of refusing a renewed session.

let app: TestApp
let env: Bootstrapped
let client: TestClient
beforeAll(async () => {
  app = await startApp()
  env = await app.bootstrap()
  client = await createClient(app, env)
})
afterAll(async () => {
  await app?.close()
})

const until = async (probe: () => Promise<boolean>, withinMs = 2_000) => {
  const deadline = Date.now() + withinMs
  while (!(await probe())) {
    expect(Date.now()).toBeLessThan(deadline)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

describe("session expiry in the live-state memory", () => {
  it("a session renewed without announcement is read again once the remembered expiry passes; a shortened one applies", async () => {
    const user = await createUser(app, env)
    const minted = await mintCode(app, env, client, user)
    const t = (await exchangeCode(app, env, client, minted)).json as { access_token: string }
    const setIdle = (ms: number) =>
      queryRows(app, "update login_sessions set idle_expires_at = $2 where id = $1", [
        minted.sessionId,
        new Date(app.now() + ms),
      ])

    // Shortened (announced): remembered with the 60 s expiry once the notification has come back.
    await setIdle(60_000)
    await new Promise((resolve) => setTimeout(resolve, 200)) // the announcement of the change has come back
    expect((await userinfo(app, env, t.access_token)).status).toBe(200)
    expect((await userinfo(app, env, t.access_token)).status).toBe(200)
    // Renewed to 200 s (not announced), then past the remembered 60 s: still accepted.
    await setIdle(200_000)
    await app.advance("90 seconds")
    expect((await userinfo(app, env, t.access_token)).status).toBe(200)
    // Shortened again (announced): refused once past it.
    await setIdle(10_000)
    await app.advance("20 seconds")
    await until(async () => (await userinfo(app, env, t.access_token)).status === 401)
  })
})

describe("the live-state memory is bounded", () => {
  it("sessions per user, sessions altogether, clients and pending local writes each keep at most their bound, oldest dropped first", async () => {
    const users = [await createUser(app, env), await createUser(app, env), await createUser(app, env)]
    const sessionsOf = async (user: (typeof users)[number], n: number) => {
      const ids: Array<string> = []
      for (let i = 0; i < n; i++) ids.push((await mintCode(app, env, client, user)).sessionId)
      return ids
    }
    const [a, b, c] = [await sessionsOf(users[0]!, 3), await sessionsOf(users[1]!, 2), await sessionsOf(users[2]!, 1)]
    const clients = [client, await createClient(app, env), await createClient(app, env)]
    const sizes = await app.run(
      Effect.scoped(
        Effect.gen(function* () {
          const cache = yield* makeLiveStateCache({ sessions: 4, sessionsPerUser: 2, clients: 2, pending: 3 })
          while (!cache.listening()) yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 10)))
          const seen: Array<ReturnType<typeof cache.sizes>> = []
          // A user's third session drops their first.
          for (const s of a) yield* cache.read(env.environment_id, users[0]!.id, s)
          seen.push(cache.sizes())
          // Up to 4 sessions altogether; the fifth drops the least recently stored user (the first).
          for (const s of b) yield* cache.read(env.environment_id, users[1]!.id, s)
          seen.push(cache.sizes())
          yield* cache.read(env.environment_id, users[2]!.id, c[0]!)
          seen.push(cache.sizes())
          for (const k of clients) yield* cache.readClient(env.environment_id, k.id)
          seen.push(cache.sizes())
          // Five local writes for five users: three are remembered; once they have ended, the next write drops them.
          for (let i = 0; i < 5; i++) liveStateChanged(env.environment_id, `usr_pending${i}`)
          seen.push(cache.sizes())
          yield* Effect.promise(() => app.advance("6 seconds"))
          liveStateChanged(env.environment_id, "usr_pending_last")
          seen.push(cache.sizes())
          return seen
        }),
      ),
    )
    expect(sizes).toEqual([
      { users: 1, sessions: 2, clients: 0, pending: 0 },
      { users: 2, sessions: 4, clients: 0, pending: 0 },
      { users: 2, sessions: 3, clients: 0, pending: 0 },
      { users: 2, sessions: 3, clients: 2, pending: 0 },
      { users: 2, sessions: 3, clients: 2, pending: 3 },
      { users: 2, sessions: 3, clients: 2, pending: 1 },
    ])
  })
})

/**
 * A TCP proxy to the test's Postgres that can make the LISTEN connection silent: it stops
 * passing that connection's bytes either way without closing it, as a NAT or firewall that
 * forgot the connection does (no error, no close ever reaches the client).
 */
const startSilencingProxy = async (databaseUrl: string) => {
  const target = new URL(databaseUrl)
  const upstreamPort = Number(target.port || 5432)
  const upstreamHost = target.hostname
  const links: Array<{ listens: boolean; silent: boolean }> = []
  const sockets = new Set<Socket>()
  const server = createServer((client) => {
    const upstream = connect(upstreamPort, upstreamHost)
    const link = { listens: false, silent: false }
    links.push(link)
    for (const socket of [client, upstream]) {
      sockets.add(socket)
      socket.on("error", () => {})
      socket.on("close", () => {
        client.destroy()
        upstream.destroy()
      })
    }
    client.on("data", (chunk: Buffer) => {
      if (chunk.includes("LISTEN ")) link.listens = true
      if (!link.silent) upstream.write(chunk)
    })
    upstream.on("data", (chunk: Buffer) => {
      if (!link.silent) client.write(chunk)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as { port: number }
  target.hostname = "127.0.0.1"
  target.port = String(port)
  return {
    url: target.toString(),
    /** Silences the connections that have sent LISTEN; how many there were. */
    silenceListen: () => links.filter((l) => l.listens).map((l) => (l.silent = true)).length,
    close: () => {
      for (const socket of sockets) socket.destroy()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

describe("a LISTEN connection that goes silent", () => {
  it("is found by its heartbeat: the memory is dropped and answers nothing until LISTEN is back, then it is kept again", async () => {
    const user = await createUser(app, env)
    const { sessionId } = await mintCode(app, env, client, user)
    const proxy = await startSilencingProxy(app.databaseUrl)
    try {
      const seen = await app.run(
        Effect.scoped(
          Effect.gen(function* () {
            const cache = yield* makeLiveStateCache(LIVE_STATE_CACHE)
            const listening = (expected: boolean, withinMs: number) =>
              Effect.promise(() => until(async () => cache.listening() === expected, withinMs))
            yield* listening(true, 5_000)
            yield* cache.read(env.environment_id, user.id, sessionId)
            const held = cache.sizes().sessions
            // A heartbeat answered: still listening, the entry kept.
            yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, LISTEN_HEARTBEAT_MS + 500)))
            const answered = cache.listening() && cache.sizes().sessions === held
            const silenced = proxy.silenceListen()
            // Found within a heartbeat, its answer's bound and the driver's 5 s before it closes the connection.
            yield* listening(false, LISTEN_HEARTBEAT_MS + LISTEN_ANSWER_MS + 5_000 + 3_000)
            const afterSilence = cache.sizes().sessions
            // LISTEN again after its pause (on the application's clock), on a new connection.
            yield* Effect.promise(() =>
              until(async () => {
                await app.advance("1 second")
                return cache.listening()
              }, 5_000),
            )
            yield* cache.read(env.environment_id, user.id, sessionId)
            return { held, answered, silenced, afterSilence, keptAgain: cache.sizes().sessions }
          }),
        ).pipe(Effect.provide(SqlLive({ statementTimeoutMs: 2_000 })), Effect.provideService(DatabaseUrl, proxy.url)),
      )
      expect(seen).toEqual({ held: 1, answered: true, silenced: 1, afterSilence: 0, keptAgain: 1 })
    } finally {
      await proxy.close()
    }
  }, 60_000)
})
