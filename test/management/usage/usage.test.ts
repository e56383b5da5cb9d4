import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { recordMonthlyActiveUser } from "../../../src/usage/mau.js"
import { billingMonthOf, monthBounds } from "../../../src/usage/limits.js"
import { type Bootstrapped, type TestApp, startApp } from "../../support/app.js"
import { createClient, createUser, exchangeCode, mintCode, refresh, type TestClient } from "../../oidc/support.js"
import { makeEnvironment, makeKey } from "../support/callers.js"
import { query } from "../support/db.js"
import { expectProblem } from "../support/problem.js"
import { workspaceEvents } from "../support/records.js"

// GET /v1/usage/mau and MAU counting where logins complete (spec: "Other Management routes";
// Limits "Free tier 30,000 MAU; thresholds 80, 95, 100 percent"; Events mau.threshold_reached).
// Large counts are seeded directly in SQL; the user that crosses a threshold logs in through
// the shared login-completion function (issueAuthorizationCode).

let app: TestApp
let b: Bootstrapped
let _client: TestClient
beforeAll(async () => {
  app = await startApp()
  b = await app.bootstrap()
  _client = await createClient(app, b)
})
afterAll(async () => {
  await app?.close()
})

const month = () => billingMonthOf(app.now())
const usage = (qs = "", key?: string) => app.management(`/v1/usage/mau${qs}`, key ? { key } : {})

/** `n` more active users of the month in one Environment (SQL seed), keeping the Workspace counter equal to the rows. */
const seedActive = async (workspaceId: string, environmentId: string, n: number, billingMonth = month()) => {
  const tag = Math.random().toString(36).slice(2, 10)
  await query(
    app,
    `insert into mau_users (workspace_id, environment_id, billing_month, user_id, first_active_at)
    select $1, $2, $3, 'usr_seed' || $5 || '_' || g, $6 from generate_series(1, $4::int) g`,
    [workspaceId, environmentId, billingMonth, n, tag, new Date(app.now())],
  )
  await query(
    app,
    `insert into mau_counters (workspace_id, billing_month, active_users) values ($1, $2, $3)
    on conflict (workspace_id, billing_month) do update set active_users = mau_counters.active_users + $3`,
    [workspaceId, billingMonth, n],
  )
}

const counter = async (workspaceId: string, billingMonth = month()) =>
  (
    await query<{ active_users: number }>(
      app,
      `select active_users from mau_counters where workspace_id = $1 and billing_month = $2`,
      [workspaceId, billingMonth],
    )
  )[0]?.active_users ?? 0

const login = async (env: Bootstrapped, c: TestClient, user?: { id: string; email: string }) => {
  const u = user ?? (await createUser(app, env))
  await mintCode(app, env, c, u)
  return u
}

describe("MAU counting at login completion", () => {
  it("counts a user once per month however often it logs in; GET /usage/mau reports the Workspace aggregate", async () => {
    const w = await app.bootstrap()
    const c = await createClient(app, w)
    const ada = await login(w, c)
    await login(w, c, ada)
    await login(w, c, ada)
    await login(w, c)
    const res = await app.management("/v1/usage/mau", { key: w.api_key })
    expect(res.status).toBe(200)
    expect(res.headers["x-request-id"]).toMatch(/^req_/)
    const { start, end } = monthBounds(month())
    expect(res.json).toEqual({
      workspace_id: w.workspace_id,
      environment_id: null,
      billing_month: month(),
      period_start: start.toISOString(),
      period_end: end.toISOString(),
      mau: 2,
      workspace_mau: 2,
      free_tier_limit: 30000,
      free_tier_remaining: 29998,
      free_tier_used_percent: 0.01,
      thresholds: [
        { percent: 80, mau: 24000, reached: false, reached_at: null },
        { percent: 95, mau: 28500, reached: false, reached_at: null },
        { percent: 100, mau: 30000, reached: false, reached_at: null },
      ],
      billing_status: "within_free_tier",
      grace_period_started_at: null,
      grace_period_ends_at: null,
      billing: {
        status: "not_configured",
        subscription_id: null,
        past_due_since: null,
        grace_period_ends_at: null,
        grace_period_ended: false,
      },
    })
    expect(
      await query(app, `select user_id from mau_users where environment_id = $1`, [w.environment_id]),
    ).toHaveLength(2)
  })

  it("the Workspace aggregate spans its Environments; environment_id narrows `mau` to one", async () => {
    const w = await app.bootstrap()
    const c = await createClient(app, w)
    const second = await makeEnvironment(app, w.workspace_id, w.project_id)
    const w2: Bootstrapped = { ...w, environment_id: second }
    const c2 = await createClient(app, w2)
    await login(w, c)
    await login(w2, c2)
    await login(w2, c2)
    const all = await app.management("/v1/usage/mau", { key: w.api_key })
    expect(all.json).toMatchObject({ environment_id: null, mau: 3, workspace_mau: 3 })
    const one = await app.management(`/v1/usage/mau?environment_id=${second}`, { key: w.api_key })
    expect(one.json).toMatchObject({ environment_id: second, mau: 2, workspace_mau: 3 })
    const first = await app.management(
      `/v1/usage/mau?environment_id=${w.environment_id}&workspace_id=${w.workspace_id}`,
      { key: w.api_key },
    )
    expect(first.json).toMatchObject({ environment_id: w.environment_id, mau: 1, workspace_mau: 3 })
  })

  it("is idempotent and race-safe: 8 concurrent completions of one user count it once", async () => {
    const w = await app.bootstrap()
    const c = await createClient(app, w)
    const user = await createUser(app, w)
    await Promise.all(Array.from({ length: 8 }, () => mintCode(app, w, c, user)))
    expect(await counter(w.workspace_id)).toBe(1)
    expect((await app.management("/v1/usage/mau", { key: w.api_key })).json.mau).toBe(1)
  })

  it("a login whose transaction rolls back counts nothing", async () => {
    const w = await app.bootstrap()
    const user = await createUser(app, w)
    const failed = await app.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        return yield* sql
          .withTransaction(
            Effect.gen(function* () {
              yield* recordMonthlyActiveUser({
                workspaceId: w.workspace_id,
                environmentId: w.environment_id,
                userId: user.id,
              })
              return yield* Effect.fail("rolled back" as const)
            }),
          )
          .pipe(Effect.flip)
      }),
    )
    expect(failed).toBe("rolled back")
    expect(await counter(w.workspace_id)).toBe(0)
    expect(await query(app, `select 1 from mau_users where workspace_id = $1`, [w.workspace_id])).toHaveLength(0)
  })

  it("a refresh in a new month counts the user in that month (refresh = activity)", async () => {
    const w = await app.bootstrap()
    const c = await createClient(app, w)
    // Move to one hour before the end of this month, log in, then refresh two hours later.
    const before = month()
    await app.advance(monthBounds(before).end.getTime() - app.now() - 3600_000)
    const user = await createUser(app, w)
    const minted = await mintCode(app, w, c, user)
    const tokens = await exchangeCode(app, w, c, minted)
    expect(tokens.status).toBe(200)
    await app.advance("2 hours")
    const after = month()
    expect(after).not.toBe(before)
    expect((await app.management(`/v1/usage/mau?billing_month=${after}`, { key: w.api_key })).json.mau).toBe(0)
    const refreshed = await refresh(app, w, c, tokens.json.refresh_token)
    expect(refreshed.status).toBe(200)
    expect((await app.management(`/v1/usage/mau?billing_month=${after}`, { key: w.api_key })).json.mau).toBe(1)
    expect((await app.management(`/v1/usage/mau?billing_month=${before}`, { key: w.api_key })).json.mau).toBe(1)
    // A second refresh in the same month changes nothing.
    expect((await refresh(app, w, c, refreshed.json.refresh_token)).status).toBe(200)
    expect(await counter(w.workspace_id, after)).toBe(1)
  })
})

describe("mau.threshold_reached: 80, 95, 100 percent of the free tier, once per threshold per month", () => {
  it("the login that reaches each threshold emits it once, with the spec's payload; the report shows it", async () => {
    const w = await app.bootstrap()
    const c = await createClient(app, w)
    await seedActive(w.workspace_id, w.environment_id, 23_999)
    expect(await workspaceEvents(app, w.workspace_id, "mau.threshold_reached")).toEqual([])
    await login(w, c) // 24,000 = 80 %
    await login(w, c) // 24,001: nothing new
    let events = await workspaceEvents(app, w.workspace_id, "mau.threshold_reached")
    expect(events).toHaveLength(1)
    expect(events[0]).toMatchObject({
      type: "mau.threshold_reached",
      version: 1,
      workspaceId: w.workspace_id,
      actor: { type: "system" },
      payload: { billingMonth: month(), thresholdPercent: 80, currentMau: 24_000, freeTierLimit: 30_000 },
    })
    expect(events[0]).not.toHaveProperty("environmentId")
    let report = (await app.management("/v1/usage/mau", { key: w.api_key })).json
    expect(report).toMatchObject({
      workspace_mau: 24_001,
      free_tier_remaining: 5_999,
      free_tier_used_percent: 80,
      billing_status: "within_free_tier",
    })
    expect(report.thresholds.map((t: any) => t.reached)).toEqual([true, false, false])
    expect(report.thresholds[0].reached_at).toBe(new Date(events[0].occurredAt).toISOString())

    await seedActive(w.workspace_id, w.environment_id, 28_499 - 24_001)
    await login(w, c) // 28,500 = 95 %
    await seedActive(w.workspace_id, w.environment_id, 29_999 - 28_500)
    await login(w, c) // 30,000 = 100 %
    await login(w, c) // 30,001
    events = await workspaceEvents(app, w.workspace_id, "mau.threshold_reached")
    expect(events.map((e) => [e.payload.thresholdPercent, e.payload.currentMau])).toEqual([
      [80, 24_000],
      [95, 28_500],
      [100, 30_000],
    ])

    const billingMonth = month()
    report = (await app.management(`/v1/usage/mau?billing_month=${billingMonth}`, { key: w.api_key })).json
    const reachedAt = events[2].occurredAt
    expect(report).toMatchObject({
      workspace_mau: 30_001,
      free_tier_remaining: 0,
      billing_status: "grace_period",
      grace_period_started_at: new Date(reachedAt).toISOString(),
      grace_period_ends_at: new Date(Date.parse(reachedAt) + 7 * 86400_000).toISOString(),
    })
    expect(report.thresholds.map((t: any) => t.reached)).toEqual([true, true, true])
    await app.advance("6 days")
    expect(
      (await app.management(`/v1/usage/mau?billing_month=${billingMonth}`, { key: w.api_key })).json.billing_status,
    ).toBe("grace_period")
    await app.advance("1 day")
    expect(
      (await app.management(`/v1/usage/mau?billing_month=${billingMonth}`, { key: w.api_key })).json.billing_status,
    ).toBe("grace_period_ended")
  })

  it("race: 10 concurrent first logins across 80 % emit the threshold exactly once", async () => {
    const w = await app.bootstrap()
    const c = await createClient(app, w)
    await seedActive(w.workspace_id, w.environment_id, 23_995)
    const users = await Promise.all(Array.from({ length: 10 }, () => createUser(app, w)))
    await Promise.all(users.map((u) => mintCode(app, w, c, u)))
    const events = await workspaceEvents(app, w.workspace_id, "mau.threshold_reached")
    expect(events).toHaveLength(1)
    expect(events[0].payload).toMatchObject({ thresholdPercent: 80, currentMau: 24_000 })
    expect(await counter(w.workspace_id)).toBe(24_005)
  })

  it("thresholds are per Workspace and per month", async () => {
    const w = await app.bootstrap()
    const other = await app.bootstrap()
    const c = await createClient(app, w)
    await seedActive(other.workspace_id, other.environment_id, 23_999)
    await seedActive(w.workspace_id, w.environment_id, 23_999, "2001-01")
    await login(w, c)
    expect(await workspaceEvents(app, w.workspace_id, "mau.threshold_reached")).toEqual([])
    expect(await workspaceEvents(app, other.workspace_id, "mau.threshold_reached")).toEqual([])
    const past = (await app.management("/v1/usage/mau?billing_month=2001-01", { key: w.api_key })).json
    expect(past).toMatchObject({
      billing_month: "2001-01",
      mau: 23_999,
      period_start: "2001-01-01T00:00:00.000Z",
      period_end: "2001-02-01T00:00:00.000Z",
    })
  })
})

describe("GET /usage/mau refusals and isolation", () => {
  it("billing_month must be YYYY-MM", async () => {
    for (const bad of ["2025-13", "2025-00", "2025-1", "25-01", "2025/01", "abc", "2025-01-01"]) {
      expectProblem(await usage(`?billing_month=${bad}`), 400, "invalid_request")
    }
    expect((await usage("?billing_month=2999-12")).json).toMatchObject({ billing_month: "2999-12", mau: 0 })
  })

  it("needs usage:read (401 without a key, 403 insufficient_scope without the scope)", async () => {
    expectProblem(await app.request(app.config.managementHost, "/v1/usage/mau"), 401, "unauthorized")
    const key = await makeKey(app, { workspaceId: b.workspace_id, scopes: ["users:read", "billing:read"] })
    expectProblem(await usage("", key), 403, "insufficient_scope")
  })

  it("another Workspace's Environment is 404; workspace_id must match", async () => {
    const other = await app.bootstrap()
    expectProblem(await usage(`?environment_id=${other.environment_id}`), 404, "not_found")
    expectProblem(await usage("?environment_id=env_doesnotexist"), 404, "not_found")
    expectProblem(await usage(`?workspace_id=${other.workspace_id}`), 400, "invalid_request")
  })

  it("an Environment-pinned key sees only its Environment", async () => {
    const w = await app.bootstrap()
    const c = await createClient(app, w)
    const second = await makeEnvironment(app, w.workspace_id, w.project_id)
    const c2 = await createClient(app, { ...w, environment_id: second })
    await login(w, c)
    await login({ ...w, environment_id: second }, c2)
    await login({ ...w, environment_id: second }, c2)
    const pinned = await makeKey(app, { workspaceId: w.workspace_id, environmentId: second, scopes: ["usage:read"] })
    expect((await usage("", pinned)).json).toMatchObject({ environment_id: second, mau: 2, workspace_mau: 3 })
    expect((await usage(`?environment_id=${second}`, pinned)).json).toMatchObject({ environment_id: second, mau: 2 })
    expectProblem(await usage(`?environment_id=${w.environment_id}`, pinned), 404, "not_found")
  })
})
