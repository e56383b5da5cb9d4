import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, startApp, type TestApp } from "../../support/app.js"
import { etagOf, RESOURCE_KINDS } from "./resource-kinds.js"

// Spec, Management common rule 4: "ETag-capable responses carry ETag"; the ETag is
// `"<id>.<version>"` and every update increments the version (docs/decisions/management-api.md).
// Checked for every resource kind, over HTTP.

let app: TestApp
let b: Bootstrapped
beforeAll(async () => {
  app = await startApp()
  b = await app.bootstrap()
})
afterAll(async () => {
  await app?.close()
})

const ETAG = /^"[a-z]{3}_[a-z2-7]{32}\.\d+"$/

describe.each(RESOURCE_KINDS)("ETag: $name", (kind) => {
  it('the create (or read) answer carries "<id>.<version>", a read answers the same, and every update moves it by one', async () => {
    const { created, path, key } = await kind.create(app, b)
    const id = created.json.id as string
    const etag = created.headers["etag"] as string
    expect(etag).toMatch(ETAG)
    // A new resource starts at version 1 (the Workspace is read, not created, here).
    if (kind.name !== "Workspace") expect(etag).toBe(etagOf(id, 1))
    const version = Number(/\.(\d+)"$/.exec(etag)![1])
    const read = () => app.management(kind.read!(path), key ? { key } : {})
    if (kind.read) expect((await read()).headers["etag"]).toBe(etag)
    for (const n of [1, 2]) {
      const updated = await app.management(path, {
        method: kind.update.method,
        body: kind.update.body(n),
        ...(key ? { key } : {}),
      })
      expect(updated.status, updated.text).toBe(200)
      expect(updated.headers["etag"]).toBe(etagOf(id, version + n))
      if (kind.read) {
        const again = await read()
        expect(again.status).toBe(200)
        expect(again.headers["etag"]).toBe(etagOf(id, version + n))
      }
    }
  })
})

describe("ETag of the Theme", () => {
  it('is "<environment id>.theme.<version>", apart from the Environment\'s own, and a replace moves it by one', async () => {
    const path = `/v1/environments/${b.environment_id}/theme`
    const envEtag = (await app.management(`/v1/environments/${b.environment_id}`)).headers["etag"]
    const got = await app.management(path)
    expect(got.headers["etag"]).toBe(`"${b.environment_id}.theme.1"`)
    const put = await app.management(path, {
      method: "PUT",
      body: { primary_color: "#000000" },
      headers: { "if-match": `"${b.environment_id}.theme.1"` },
    })
    expect(put.status, put.text).toBe(200)
    expect(put.headers["etag"]).toBe(`"${b.environment_id}.theme.2"`)
    expect((await app.management(path)).headers["etag"]).toBe(`"${b.environment_id}.theme.2"`)
    expect((await app.management(`/v1/environments/${b.environment_id}`)).headers["etag"]).toBe(envEtag)
  })
})
