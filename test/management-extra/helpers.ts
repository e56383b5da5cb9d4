import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { expect } from "vitest"
import { createPlatformUser, mintDashboardSession } from "../../src/management/auth/dashboard.js"
import { Tenancy } from "../../src/tenancy/service.js"
import type { Bootstrapped, TestApp } from "../support/app.js"
import type { TestResponse } from "../support/http.js"

/** Runs SQL on the app's database (seeding, and assertions on stored state). */
export const query = <A extends object = Record<string, any>>(app: TestApp, text: string, params: ReadonlyArray<unknown> = []) =>
  app.run(Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return yield* sql.unsafe<A>(text, params as Array<unknown>)
  })) as Promise<ReadonlyArray<A>>

/** Asserts a Problem Details answer: status, code, media type and request id. */
export const expectProblem = (res: TestResponse, status: number, code: string) => {
  expect({ status: res.status, code: res.json?.code, body: res.text }).toMatchObject({ status, code })
  expect(res.headers["content-type"]).toContain("application/problem+json")
  expect(res.json.request_id).toBe(res.headers["x-request-id"])
  expect(res.json.request_id).toMatch(/^req_/)
}

/** An API key of a Workspace, optionally pinned to one Environment. */
export const makeKey = (app: TestApp, input: { workspaceId: string; environmentId?: string | null; scopes: ReadonlyArray<string> }) =>
  app.run(Effect.gen(function* () {
    const tenancy = yield* Tenancy
    const sql = yield* SqlClient.SqlClient
    const key = yield* sql.withTransaction(tenancy.createApiKey({
      workspaceId: input.workspaceId, environmentId: input.environmentId ?? null, name: "test key", scopes: input.scopes, expiresAt: null,
    }))
    return key.secret
  }))

/** A second Environment in the bootstrapped Project. */
export const makeEnvironment = (app: TestApp, b: Bootstrapped) =>
  app.run(Effect.gen(function* () {
    const tenancy = yield* Tenancy
    const sql = yield* SqlClient.SqlClient
    const env = yield* sql.withTransaction(tenancy.createEnvironment({ workspaceId: b.workspace_id, projectId: b.project_id, type: "test", name: "Second" }))
    return env.id
  }))

let memberCounter = 0
/** A platform user with a role in the Workspace and a Dashboard session token. */
export const dashboardUser = (app: TestApp, workspaceId: string, role: "owner" | "admin" | "member") =>
  app.run(Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return yield* sql.withTransaction(Effect.gen(function* () {
      const id = yield* createPlatformUser(`${role}-${process.pid}-${++memberCounter}@dashboard.example`, { workspaceId, role })
      const token = yield* mintDashboardSession(id)
      return { id, token, headers: { authorization: `Bearer ${token}`, "x-workspace-id": workspaceId } }
    }))
  }))

/** Domain events of a Workspace in the outbox, oldest first. */
export const workspaceEvents = async (app: TestApp, workspaceId: string, type: string) =>
  (await query<{ envelope: any }>(app, `select envelope from event_outbox where workspace_id = $1 and type = $2 order by seq`, [workspaceId, type]))
    .map((r) => r.envelope)

export const auditRows = (app: TestApp, workspaceId: string, action: string) =>
  query<{ action: string; actor_type: string; actor_id: string | null; environment_id: string | null; subject_type: string | null; subject_id: string | null; result: string; details: any; request_id: string | null }>(app,
    `select action, actor_type, actor_id, environment_id, subject_type, subject_id, result, details, request_id from audit_events
      where workspace_id = $1 and action = $2 order by created_at, id`, [workspaceId, action])
