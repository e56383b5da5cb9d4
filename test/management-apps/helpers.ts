import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { expect } from "vitest"
import { Tenancy } from "../../src/tenancy/service.js"
import type { TestApp } from "../support/app.js"
import type { TestResponse } from "../support/http.js"

/** An API key made through Tenancy, optionally pinned to one Environment. */
export const makeKey = (app: TestApp, input: { workspaceId: string; environmentId?: string | null; scopes: ReadonlyArray<string> }) =>
  app.run(Effect.gen(function* () {
    const tenancy = yield* Tenancy
    const sql = yield* SqlClient.SqlClient
    const key = yield* sql.withTransaction(tenancy.createApiKey({
      workspaceId: input.workspaceId, environmentId: input.environmentId ?? null, name: "test key", scopes: input.scopes, expiresAt: null,
    }))
    return key.secret
  }))

/** A second Environment in an existing Project. */
export const makeEnvironment = (app: TestApp, workspaceId: string, projectId: string) =>
  app.run(Effect.gen(function* () {
    const tenancy = yield* Tenancy
    const sql = yield* SqlClient.SqlClient
    const env = yield* sql.withTransaction(tenancy.createEnvironment({ workspaceId, projectId, type: "test", name: "Second" }))
    return env.id
  }))

/** Runs SQL on the app's database (assertions on stored state). */
export const query = <A extends object>(app: TestApp, text: string, params: ReadonlyArray<unknown> = []) =>
  app.run(Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return yield* sql.unsafe<A>(text, params as Array<unknown>)
  })) as Promise<ReadonlyArray<A>>

export const countRows = async (app: TestApp, table: "clients" | "connections" | "domains", environmentId: string) =>
  (await query<{ n: number }>(app, `select count(*)::int as n from ${table} where environment_id = $1`, [environmentId]))[0]!.n

/** Audit actions of a subject by time (one request's records share a time: then by name). */
export const auditActions = async (app: TestApp, subjectId: string) =>
  (await query<{ action: string }>(app, "select action from audit_events where subject_id = $1 order by created_at, action", [subjectId]))
    .map((r) => r.action)

/** Asserts a Problem Details answer: status, code and request id. */
export const expectProblem = (res: TestResponse, status: number, code: string) => {
  expect({ status: res.status, code: res.json?.code, detail: res.json?.detail }).toMatchObject({ status, code })
  expect(res.headers["content-type"]).toContain("application/problem+json")
  expect(res.json.request_id).toBe(res.headers["x-request-id"])
}
