import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, startApp, type TestApp } from "../../support/app.js"
import type { TestResponse } from "../../support/http.js"
import { createWebhook, type Receiver, startReceiver, WEBHOOK_TEST_ENV } from "../../webhooks/support.js"
import { query } from "../../login/support.js"
import { makeDashboardSession } from "../../support/tenancy.js"
import { createDashboardSessionCommand } from "../../../src/operator/platform-users.js"

// Management API budgets (docs/decisions/rate-limits-and-caches.md, "Write limits: every cheap-to-send write is
// counted per address", Management): per API key per minute, with the RateLimit-Policy and
// RateLimit fields of draft-ietf-httpapi-ratelimit-headers-11 on every answer to the key, and a
// tighter budget per webhook for POST /webhooks/{id}/test. Small numbers; windows move with
// the TestClock.
const BUDGET = 6
const WEBHOOK_TESTS = 2

let app: TestApp
let receiver: Receiver

beforeAll(async () => {
  receiver = await startReceiver([{ status: 200 }])
  app = await startApp({
    env: {
      ...WEBHOOK_TEST_ENV,
      RATE_LIMIT_MANAGEMENT_PER_MINUTE: String(BUDGET),
      RATE_LIMIT_WEBHOOK_TEST_PER_MINUTE: String(WEBHOOK_TESTS),
    },
  })
})
afterAll(async () => {
  await app?.close()
  await receiver?.close()
})

const POLICY = `"management:caller";q=${BUDGET};w=60`
/** The remaining budget the RateLimit field reports, and the seconds until its reset. */
const state = (res: TestResponse) => {
  const m = /^"management:caller";r=(\d+);t=(\d+)/.exec(String(res.headers["ratelimit"]))
  expect(m, `RateLimit: ${String(res.headers["ratelimit"])}`).not.toBeNull()
  return { remaining: Number(m![1]), reset: Number(m![2]) }
}

describe("Management API budget per key", () => {
  it("every answer to a key carries RateLimit-Policy and a decreasing RateLimit; past the budget 429 with Retry-After; another key is unaffected", async () => {
    const b: Bootstrapped = await app.bootstrap()
    const other = await app.management("/v1/api-keys", {
      key: b.api_key,
      body: {
        workspace_id: b.workspace_id,
        name: "other",
        scopes: ["workspaces:read", "projects:write", "projects:read"],
      },
    })
    expect(other.status, other.text).toBe(201)
    expect(other.headers["ratelimit-policy"]).toBe(POLICY)
    expect(state(other).remaining).toBe(BUDGET - 1)

    const remaining: Array<number> = []
    for (let i = 0; i < 3; i++) {
      const res = await app.management("/v1/workspaces", { key: b.api_key })
      expect(res.status).toBe(200)
      expect(res.headers["ratelimit-policy"]).toBe(POLICY)
      remaining.push(state(res).remaining)
    }
    // An error answer after authentication carries them too.
    const missing = await app.management("/v1/projects/prj_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", { key: b.api_key })
    expect(missing.status).toBe(404)
    remaining.push(state(missing).remaining)
    const last = await app.management("/v1/workspaces", { key: b.api_key })
    remaining.push(state(last).remaining)
    expect(remaining).toEqual([4, 3, 2, 1, 0])

    // Past the budget: a 429 that names the limit, says when to retry, and changes nothing.
    const projects = async () =>
      (
        await query<{ n: number }>(app, "select count(*)::int as n from projects where workspace_id = $1", [
          b.workspace_id,
        ])
      )[0]!.n
    const before = await projects()
    const refused = await app.management("/v1/projects", {
      key: b.api_key,
      body: { workspace_id: b.workspace_id, name: "Refused", slug: "refused" },
    })
    expect([refused.status, refused.json.code, refused.json.limit], refused.text).toEqual([
      429,
      "rate_limited",
      "management:caller",
    ])
    const retryAfter = Number(refused.headers["retry-after"])
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(60)
    expect(state(refused)).toEqual({ remaining: 0, reset: retryAfter })
    expect(await projects()).toBe(before)

    // The other key of the same Workspace has its own budget.
    const theirs = await app.management("/v1/workspaces", { key: other.json.secret })
    expect(theirs.status).toBe(200)
    expect(state(theirs).remaining).toBe(BUDGET - 1)

    // The next window starts afresh.
    await app.advance(retryAfter * 1000)
    const again = await app.management("/v1/workspaces", { key: b.api_key })
    expect(again.status).toBe(200)
    expect(state(again).remaining).toBe(BUDGET - 1)
  })

  it("a Dashboard user's sessions share one budget: signing in again buys nothing", async () => {
    const b = await app.bootstrap()
    const email = `owner-${b.workspace_id}@example.com`
    const first = await makeDashboardSession(app, { email, workspaceId: b.workspace_id })
    const second = await app.run(createDashboardSessionCommand(app.config, email))
    const call = (session: string) =>
      app.management("/v1/workspaces", {
        headers: { authorization: `Bearer ${session}`, "x-workspace-id": b.workspace_id },
      })
    const seen: Array<number> = []
    for (const session of [first, first, second.dashboard_session, second.dashboard_session]) {
      const res = await call(session)
      expect(res.status, res.text).toBe(200)
      expect(res.headers["ratelimit-policy"]).toBe(POLICY)
      seen.push(state(res).remaining)
    }
    expect(seen).toEqual([5, 4, 3, 2])
    // The Workspace's API key is another caller.
    expect(state(await app.management("/v1/workspaces", { key: b.api_key })).remaining).toBe(BUDGET - 1)
  })

  it("an unauthenticated request carries no budget fields (there is no caller to count)", async () => {
    const res = await app.management("/v1/workspaces", { key: "sk_live_unknown" })
    expect(res.status).toBe(401)
    expect(res.headers["ratelimit"]).toBeUndefined()
  })
})

describe("POST /webhooks/{id}/test: a budget per webhook on top of the key's", () => {
  it("past it, 429 naming the webhook's limit and no request to the receiver; another webhook is unaffected", async () => {
    const b = await app.bootstrap()
    const hook = await createWebhook(
      app,
      { environment_id: b.environment_id, url: receiver.url(), event_types: ["user.created"] },
      b.api_key,
    )
    const second = await createWebhook(
      app,
      { environment_id: b.environment_id, url: receiver.url("/second"), event_types: ["user.created"] },
      b.api_key,
    )
    const test = (id: string) => app.management(`/v1/webhooks/${id}/test`, { method: "POST", body: {}, key: b.api_key })
    const sent = receiver.received.length
    for (let i = 0; i < WEBHOOK_TESTS; i++) {
      const res = await test(hook.id)
      expect(res.status, res.text).toBe(200)
      expect(res.headers["ratelimit-policy"]).toBe(`${POLICY}, "webhook_test:webhook";q=${WEBHOOK_TESTS};w=60`)
      expect(String(res.headers["ratelimit"])).toMatch(
        new RegExp(`^"management:caller";r=\\d+;t=\\d+, "webhook_test:webhook";r=${WEBHOOK_TESTS - 1 - i};t=\\d+$`),
      )
    }
    expect(receiver.received.length).toBe(sent + WEBHOOK_TESTS)
    const refused = await test(hook.id)
    expect([refused.status, refused.json.code, refused.json.limit], refused.text).toEqual([
      429,
      "rate_limited",
      "webhook_test:webhook",
    ])
    expect(Number(refused.headers["retry-after"])).toBeGreaterThanOrEqual(1)
    expect(receiver.received.length).toBe(sent + WEBHOOK_TESTS)
    const ok = await test(second.id)
    expect(ok.status, ok.text).toBe(200)
    expect(receiver.received.length).toBe(sent + WEBHOOK_TESTS + 1)
  })
})
