import { type ServerType, serve } from "@hono/node-server"
import { Hono } from "hono"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { CHUNK_SIZE, clearCookie, readCookie, writeCookie } from "../../packages/hono/src/cookies.js"
import { type Auth, createAuth, requireSession } from "../../packages/hono/src/index.js"
import { makeSealer } from "../../packages/hono/src/seal.js"
import { type StoredSession, writeSession } from "../../packages/hono/src/session.js"
import { freePort } from "../../src/platform/free-port.js"
import { CookieJar, randomSecret } from "./support.js"

// The cookie layer of authservice/hono over a real socket: chunking above ~3.8 KB, stale
// chunks removed, AES-256-GCM sealing with HKDF keys, rotation through a list of secrets,
// and the Secure/__Host- attributes outside localhost.

let server: ServerType
let base: string
const secure = { secure: false }
const oldSecret = randomSecret()
const newSecret = randomSecret()

const authFor = (redirectUri: string, cookieSecret: string | Array<string>): Auth =>
  createAuth({
    issuer: "http://127.0.0.1:9/e/env_unused",
    clientId: "cli_x",
    redirectUri,
    postLogoutRedirectUri: redirectUri.replace("/auth/callback", "/"),
    cookieSecret,
  })
const localOld = authFor("http://127.0.0.1:1/auth/callback", oldSecret)
const localRotated = authFor("http://127.0.0.1:1/auth/callback", [newSecret, oldSecret])
const localNewOnly = authFor("http://127.0.0.1:1/auth/callback", newSecret)
const remote = authFor("https://app.example.com/auth/callback", newSecret)

const session = (name: string): StoredSession => ({
  sid: "sid-1",
  user: { sub: "usr_1", email: "a@example.com", name },
  at: "access.token.value",
  atExp: Date.now() + 3600_000,
  rt: "rt_family.1.secret",
  it: "id.token.value",
  scope: ["openid"],
})

beforeAll(async () => {
  const hono = new Hono()
  hono.get("/write/:size", (c) => {
    writeCookie(c, "big", "x".repeat(Number(c.req.param("size"))), secure, 60)
    return c.text("ok")
  })
  hono.get("/read", (c) => c.text(readCookie(c, "big") ?? "<none>"))
  hono.get("/clear", (c) => {
    clearCookie(c, "big", secure)
    return c.text("ok")
  })
  for (const [prefix, auth] of [
    ["old", localOld],
    ["rotated", localRotated],
    ["new", localNewOnly],
    ["remote", remote],
  ] as const) {
    hono.get(`/${prefix}/seed`, (c) => {
      writeSession(c, auth, session(c.req.query("name") ?? "Ada"))
      return c.text("ok")
    })
    hono.get(`/${prefix}/private`, requireSession(auth), (c) => c.json({ user: c.get("authUser") }))
  }
  const port = await freePort()
  server = await new Promise((resolve) => {
    const s = serve({ fetch: hono.fetch, port, hostname: "127.0.0.1" }, () => resolve(s))
  })
  base = `http://127.0.0.1:${port}`
})
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()))
})

const get = async (jar: CookieJar, path: string) => {
  const cookie = jar.header()
  const res = await fetch(`${base}${path}`, { headers: cookie === "" ? {} : { cookie } })
  jar.store(res)
  return res
}

describe("chunked cookies", () => {
  it("a value up to the chunk size is one cookie; a larger one is split into name.0, name.1, ... each under 4096 bytes, read back whole", async () => {
    const jar = new CookieJar()
    await get(jar, `/write/${CHUNK_SIZE}`)
    expect(jar.names()).toEqual(["big"])
    expect(await (await get(jar, "/read")).text()).toBe("x".repeat(CHUNK_SIZE))
    const res = await get(jar, `/write/${CHUNK_SIZE * 2 + 10}`)
    for (const line of res.headers.getSetCookie()) expect(line.length).toBeLessThan(4096)
    expect(jar.names()).toEqual(["big.0", "big.1", "big.2"])
    expect(await (await get(jar, "/read")).text()).toBe("x".repeat(CHUNK_SIZE * 2 + 10))
  })

  it("rewriting removes the other shape and chunks beyond the new count; clearing removes every chunk", async () => {
    const jar = new CookieJar()
    await get(jar, `/write/${CHUNK_SIZE * 3}`)
    expect(jar.names()).toEqual(["big.0", "big.1", "big.2"])
    const shrink = await get(jar, `/write/${CHUNK_SIZE + 1}`)
    expect(
      shrink.headers
        .getSetCookie()
        .filter((l) => /Max-Age=0/.test(l))
        .map((l) => l.split("=")[0]),
    ).toEqual(["big.2"])
    expect(jar.names()).toEqual(["big.0", "big.1"])
    await get(jar, "/write/10")
    expect(jar.names()).toEqual(["big"])
    await get(jar, `/write/${CHUNK_SIZE + 1}`)
    expect(jar.names()).toEqual(["big.0", "big.1"])
    await get(jar, "/clear")
    expect(jar.names()).toEqual([])
    expect(await (await get(jar, "/read")).text()).toBe("<none>")
  })

  it("a session too large for one cookie is chunked and still authenticates; a missing chunk is refused", async () => {
    const jar = new CookieJar()
    await get(jar, `/old/seed?name=${"N".repeat(5000)}`)
    expect(jar.names()).toEqual(["authservice_session.0", "authservice_session.1"])
    const res = await get(jar, "/old/private")
    expect(res.status).toBe(200)
    expect(((await res.json()) as any).user.name).toBe("N".repeat(5000))
    jar.cookies.delete("authservice_session.1")
    expect((await get(jar, "/old/private")).status).toBe(401)
    expect(jar.names()).toEqual([]) // the unreadable remainder was cleared
  })
})

describe("sealing", () => {
  it("AES-256-GCM: the value reveals nothing, any changed byte or another purpose or an expired seal does not open", () => {
    const sealer = makeSealer([oldSecret])
    const now = Date.now()
    const sealed = sealer.seal("session", { secret: "refresh-token-value" }, now + 1000)
    expect(sealed).toMatch(/^v1\.[A-Za-z0-9_-]+$/)
    expect(Buffer.from(sealed.slice(3), "base64url").toString("latin1")).not.toContain("refresh-token-value")
    expect(sealer.open("session", sealed, now)).toMatchObject({ secret: "refresh-token-value" })
    expect(sealer.open("login", sealed, now)).toBeUndefined()
    expect(sealer.open("session", sealed, now + 1000)).toBeUndefined()
    const raw = Buffer.from(sealed.slice(3), "base64url")
    for (const i of [0, 12, raw.length - 1]) {
      const changed = Buffer.from(raw)
      changed[i] = changed[i]! ^ 1
      expect(sealer.open("session", `v1.${changed.toString("base64url")}`, now), `byte ${i}`).toBeUndefined()
    }
    expect(sealer.open("session", "v2." + sealed.slice(3), now)).toBeUndefined()
    expect(sealer.open("session", "garbage", now)).toBeUndefined()
    // two seals of the same payload differ (random IV)
    expect(sealer.seal("session", { a: 1 }, now + 1000)).not.toBe(sealer.seal("session", { a: 1 }, now + 1000))
  })

  it("key rotation: [new, old] opens cookies sealed with the old secret and re-seals with the new; [new] alone refuses them", async () => {
    const jar = new CookieJar()
    await get(jar, "/old/seed")
    const oldValue = jar.cookies.get("authservice_session")!
    expect((await get(jar.clone(), "/rotated/private")).status).toBe(200)
    expect((await get(jar.clone(), "/new/private")).status).toBe(401)
    await get(jar, "/rotated/seed")
    const newValue = jar.cookies.get("authservice_session")!
    expect(makeSealer([newSecret]).open("session", newValue, Date.now())).toBeDefined()
    expect(makeSealer([oldSecret]).open("session", newValue, Date.now())).toBeUndefined()
    expect(makeSealer([oldSecret]).open("session", oldValue, Date.now())).toBeDefined()
  })
})

describe("cookie attributes", () => {
  it("outside localhost: __Host- prefix, Secure, HttpOnly, SameSite=Lax, Path=/", async () => {
    const jar = new CookieJar()
    const res = await get(jar, "/remote/seed")
    const line = res.headers.getSetCookie()[0]!
    expect(line).toMatch(/^__Host-authservice_session=v1\./)
    for (const attr of ["Secure", "HttpOnly", "SameSite=Lax", "Path=/"]) expect(line).toContain(attr)
    expect(line).not.toMatch(/Domain=/i)
    expect((await get(jar, "/remote/private")).status).toBe(200)
  })

  it("on localhost: no Secure, no prefix (a development browser on http would drop a Secure cookie)", async () => {
    const res = await get(new CookieJar(), "/old/seed")
    const line = res.headers.getSetCookie()[0]!
    expect(line).toMatch(/^authservice_session=v1\./)
    expect(line).not.toContain("Secure")
    expect(line).toContain("HttpOnly")
  })
})
