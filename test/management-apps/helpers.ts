import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { expect } from "vitest"
import type { TestApp } from "../support/app.js"
import type { TestResponse } from "../support/http.js"

export { makeEnvironment, makeKey } from "../support/tenancy.js"

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
