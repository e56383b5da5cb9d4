import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { TTL_MS } from "../../src/http/static-answers.js"
import { Keys } from "../../src/platform/keys/service.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { sample } from "../operations/support.js"
import { queryRows } from "./support.js"

// The issuer's public documents are answered from the listener's memory after the first
// answer (src/http/static-answers.ts): same bytes and headers on both paths, ETag/304, HEAD,
// and a change on this replica seen at once; a change by another replica within the bounds.

const METRICS_TOKEN = "metrics-token-static-answers-0123"
let app: TestApp
let env: Bootstrapped
beforeAll(async () => {
  app = await startApp({ env: { METRICS_TOKEN } })
  env = await app.bootstrap()
})
afterAll(async () => {
  await app?.close()
})

const PATHS = ["/oauth2/jwks", "/.well-known/openid-configuration"]
/** The headers that must be equal on both paths (date and the request id differ by nature). */
const stable = (headers: Record<string, unknown>) => {
  const { date: _d, "x-request-id": _r, connection: _c, "keep-alive": _k, ...rest } = headers
  return rest
}

describe("JWKS and discovery from memory", () => {
  it("the second answer (from memory) equals the first (through the application): body, headers, ETag; each has its own request id", async () => {
    for (const path of PATHS) {
      const first = await app.issuer(env.environment_id, path)
      const second = await app.issuer(env.environment_id, path)
      expect(first.status).toBe(200)
      expect(second.status).toBe(200)
      expect(second.text).toBe(first.text)
      expect(stable(second.headers)).toEqual(stable(first.headers))
      expect(first.headers["etag"]).toMatch(/^"[A-Za-z0-9_-]{27}"$/)
      expect(first.headers["access-control-allow-origin"]).toBe("*")
      expect(first.headers["cache-control"]).toBe("public, max-age=60")
      expect(first.headers["content-type"]).toMatch(/^application\/json/)
      expect(first.headers["x-request-id"]).toMatch(/^req_[a-z2-7]{32}$/)
      expect(second.headers["x-request-id"]).toMatch(/^req_[a-z2-7]{32}$/)
      expect(second.headers["x-request-id"]).not.toBe(first.headers["x-request-id"])
    }
  })

  it("If-None-Match with the current ETag is 304 without a body on both paths; another tag is 200; HEAD has no body", async () => {
    for (const path of PATHS) {
      const etag = String((await app.issuer(env.environment_id, path)).headers["etag"])
      for (const ifNoneMatch of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
        const res = await app.issuer(env.environment_id, path, { headers: { "if-none-match": ifNoneMatch } })
        expect(res.status).toBe(304)
        expect(res.text).toBe("")
        expect(res.headers["etag"]).toBe(etag)
        expect(res.headers["x-request-id"]).toMatch(/^req_/)
      }
      // A query string takes the application's path: the same validator rules there.
      const viaApp = await app.issuer(env.environment_id, `${path}?x=1`, { headers: { "if-none-match": etag } })
      expect(viaApp.status).toBe(304)
      expect(viaApp.headers["etag"]).toBe(etag)
      const changed = await app.issuer(env.environment_id, path, { headers: { "if-none-match": '"other"' } })
      expect(changed.status).toBe(200)
      expect(changed.headers["etag"]).toBe(etag)
      const head = await app.issuer(env.environment_id, path, { method: "HEAD" })
      expect(head.status).toBe(200)
      expect(head.text).toBe("")
      expect(head.headers["etag"]).toBe(etag)
    }
  })

  it("answers from memory count in the request metrics like any other (surface, method, route template, status)", async () => {
    const count = async (status: string) =>
      sample(
        (
          await app.request(app.config.managementHost, "/metrics", {
            headers: { authorization: `Bearer ${METRICS_TOKEN}` },
          })
        ).text,
        "authservice_http_requests_total",
        { surface: "issuer", method: "GET", route: "/e/{environment_id}/oauth2/jwks", status },
      ) ?? 0
    const before = { ok: await count("200"), notModified: await count("304") }
    const etag = String((await app.issuer(env.environment_id, "/oauth2/jwks")).headers["etag"])
    for (let i = 0; i < 3; i++) expect((await app.issuer(env.environment_id, "/oauth2/jwks")).status).toBe(200)
    expect((await app.issuer(env.environment_id, "/oauth2/jwks", { headers: { "if-none-match": etag } })).status).toBe(
      304,
    )
    expect(await count("200")).toBe(before.ok + 4)
    expect(await count("304")).toBe(before.notModified + 1)
  })

  it("a key rotation on this replica is in the very next JWKS answer, with a new ETag", async () => {
    const before = await app.issuer(env.environment_id, "/oauth2/jwks")
    await app.issuer(env.environment_id, "/oauth2/jwks") // from memory
    const jwk = await app.run(
      Effect.gen(function* () {
        return yield* (yield* Keys).rotate(env.environment_id)
      }),
    )
    const after = await app.issuer(env.environment_id, "/oauth2/jwks")
    expect(after.json.keys.map((k: { kid: string }) => k.kid)).toContain(jwk.kid)
    expect(after.headers["etag"]).not.toBe(before.headers["etag"])
  })

  it("a change by another replica (row changed behind this one's back) shows within the Environment cache's 5 s plus the memory's lifetime", async () => {
    const created = await app.management("/v1/environments", {
      method: "POST",
      body: { project_id: env.project_id, type: "test", name: "Other replica" },
    })
    expect(created.status).toBe(201)
    const id = created.json.id as string
    expect((await app.issuer(id, "/oauth2/jwks")).status).toBe(200)
    expect((await app.issuer(id, "/oauth2/jwks")).status).toBe(200)
    await queryRows(app, "update environments set status = 'deleted' where id = $1", [id])
    await app.advance(5_000 + TTL_MS + 1)
    const gone = await app.issuer(id, "/oauth2/jwks")
    expect(gone.status).toBe(404)
    expect((await app.issuer(id, "/.well-known/openid-configuration")).status).toBe(404)
  })

  it("a deletion on this replica is answered 404 at once, from memory or not", async () => {
    const created = await app.management("/v1/environments", {
      method: "POST",
      body: { project_id: env.project_id, type: "test", name: "Delete here" },
    })
    const id = created.json.id as string
    for (const path of PATHS) {
      expect((await app.issuer(id, path)).status).toBe(200)
      expect((await app.issuer(id, path)).status).toBe(200)
    }
    const deleted = await app.management(`/v1/environments/${id}`, { method: "DELETE" })
    expect(deleted.status).toBe(200)
    for (const path of PATHS) expect((await app.issuer(id, path)).status).toBe(404)
  })
})
