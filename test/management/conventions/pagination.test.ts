import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, startApp, type TestApp } from "../../support/app.js"
import { expectProblem } from "../support/problem.js"

// Spec, Management common rule 1: "Lists use `limit` (default 25, max 100) and `cursor`;
// responses carry `next_cursor` (`null` on the last page)." Checked for every list route of the
// Management API, over HTTP.

let app: TestApp
let b: Bootstrapped
let userId: string
let webhookId: string
beforeAll(async () => {
  app = await startApp()
  b = await app.bootstrap()
  const user = await app.management("/v1/users", {
    method: "POST",
    body: { environment_id: b.environment_id, email: "paged@example.com" },
  })
  expect(user.status, user.text).toBe(201)
  userId = user.json.id
  const webhook = await app.management("/v1/webhooks", {
    method: "POST",
    body: { environment_id: b.environment_id, url: "https://hooks.example.com/paged", event_types: ["user.created"] },
  })
  expect(webhook.status, webhook.text).toBe(201)
  webhookId = webhook.json.id
})
afterAll(async () => {
  await app?.close()
})

/** Every list route, with the query it needs. */
const LISTS = (): ReadonlyArray<string> => [
  "/v1/workspaces",
  `/v1/workspaces/${b.workspace_id}/members`,
  `/v1/api-keys?workspace_id=${b.workspace_id}`,
  `/v1/projects?workspace_id=${b.workspace_id}`,
  `/v1/environments?project_id=${b.project_id}`,
  `/v1/clients?environment_id=${b.environment_id}`,
  `/v1/connections?environment_id=${b.environment_id}`,
  `/v1/domains?environment_id=${b.environment_id}`,
  `/v1/users?environment_id=${b.environment_id}`,
  `/v1/users/${userId}/identities?environment_id=${b.environment_id}`,
  `/v1/users/${userId}/passkeys?environment_id=${b.environment_id}`,
  `/v1/users/${userId}/sessions?environment_id=${b.environment_id}`,
  `/v1/webhooks?environment_id=${b.environment_id}`,
  `/v1/webhooks/${webhookId}/deliveries`,
  `/v1/audit-events?environment_id=${b.environment_id}`,
]

const withQuery = (path: string, query: string) => `${path}${path.includes("?") ? "&" : "?"}${query}`

describe("limit and cursor on every Management list", () => {
  it("answers {data, next_cursor} with limit 1 to 100", async () => {
    for (const path of LISTS()) {
      for (const limit of ["1", "100"]) {
        const res = await app.management(withQuery(path, `limit=${limit}`))
        expect(res.status, `${path} limit=${limit}: ${res.text}`).toBe(200)
        expect(Array.isArray(res.json.data), path).toBe(true)
        expect(res.json.data.length).toBeLessThanOrEqual(Number(limit))
        expect(res.json, path).toHaveProperty("next_cursor")
      }
    }
  })

  it("refuses a limit outside 1 to 100, or not an integer, and a cursor it did not make: 400 invalid_request", async () => {
    for (const path of LISTS()) {
      for (const bad of [
        "limit=0",
        "limit=101",
        "limit=abc",
        "limit=-1",
        "limit=2.5",
        "cursor=%%%",
        "cursor=bm90IHZhbGlk!",
      ]) {
        const res = await app.management(withQuery(path, bad))
        expect(res.status, `${path} ${bad}`).toBe(400)
        expectProblem(res, 400, "invalid_request")
      }
    }
  })
})

describe("pages", () => {
  const NAMES = 27

  beforeAll(async () => {
    for (let i = 0; i < NAMES; i++) {
      const res = await app.management("/v1/projects", {
        method: "POST",
        body: { workspace_id: b.workspace_id, name: `Paged ${i}` },
      })
      expect(res.status, res.text).toBe(201)
    }
  })

  it("without limit a page holds 25 and names the next; the last page's next_cursor is null", async () => {
    const path = `/v1/projects?workspace_id=${b.workspace_id}`
    const first = await app.management(path)
    expect(first.json.data).toHaveLength(25)
    expect(first.json.next_cursor).toEqual(expect.any(String))
    const second = await app.management(withQuery(path, `cursor=${first.json.next_cursor}`))
    expect(second.status).toBe(200)
    // 27 made here and the bootstrapped one.
    expect(second.json.data).toHaveLength(NAMES + 1 - 25)
    expect(second.json.next_cursor).toBeNull()
  })

  it("following next_cursor visits every item once, whatever the page size", async () => {
    const path = `/v1/projects?workspace_id=${b.workspace_id}`
    const everything = (await app.management(withQuery(path, "limit=100"))).json.data.map((p: { id: string }) => p.id)
    expect(everything).toHaveLength(NAMES + 1)
    expect((await app.management(withQuery(path, "limit=100"))).json.next_cursor).toBeNull()
    for (const size of [1, 7, 28]) {
      const seen: Array<string> = []
      let cursor: string | null = null
      let pages = 0
      do {
        const res = await app.management(withQuery(path, `limit=${size}${cursor ? `&cursor=${cursor}` : ""}`))
        expect(res.status).toBe(200)
        expect(res.json.data.length).toBeLessThanOrEqual(size)
        seen.push(...res.json.data.map((p: { id: string }) => p.id))
        cursor = res.json.next_cursor
        pages += 1
      } while (cursor !== null)
      expect(seen).toEqual(everything)
      expect(pages).toBe(Math.ceil((NAMES + 1) / size))
    }
  })
})
