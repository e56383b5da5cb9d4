import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { expect } from "vitest"
import { createPlatformUser, mintDashboardSession } from "../../src/management/auth/dashboard.js"
import { Tenancy } from "../../src/tenancy/service.js"
import type { TestApp } from "../support/app.js"
import type { TestResponse } from "../support/http.js"

let counter = 0

/** A Dashboard user (optionally a member of a Workspace) and a session token for it. */
export const dashboardUser = async (app: TestApp, membership?: { workspaceId: string; role: "owner" | "admin" | "member" }) => {
  counter += 1
  const userId = await app.run(createPlatformUser(`user${counter}.${Date.now()}@example.com`, membership))
  const token = await app.run(mintDashboardSession(userId))
  return { userId, token }
}

/** An API key made directly through Tenancy (the way bootstrap makes its key). */
export const apiKey = (app: TestApp, input: {
  workspaceId: string; environmentId?: string | null; scopes: ReadonlyArray<string>; expiresAt?: Date | null; name?: string
}) => app.run(Effect.gen(function* () {
  const tenancy = yield* Tenancy
  const sql = yield* SqlClient.SqlClient
  return yield* sql.withTransaction(tenancy.createApiKey({
    workspaceId: input.workspaceId, environmentId: input.environmentId ?? null, name: input.name ?? "test key",
    scopes: input.scopes, expiresAt: input.expiresAt ?? null,
  }))
}))

/** Runs a SQL query with the app's pool (assertions on stored state). */
export const query = <A extends object>(app: TestApp, text: string, params: ReadonlyArray<unknown> = []) =>
  app.run(Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return yield* sql.unsafe<A>(text, params as Array<unknown>)
  })) as Promise<ReadonlyArray<A>>

export const auditActions = async (app: TestApp, workspaceId: string) =>
  (await query<{ action: string; subject_id: string | null }>(app,
    "select action, subject_id from audit_events where workspace_id = $1 order by created_at, id", [workspaceId]))

/** Asserts a Problem Details answer: status, code and the X-Request-Id header. */
export const expectProblem = (res: TestResponse, status: number, code: string) => {
  expect({ status: res.status, code: res.json?.code }).toEqual({ status, code })
  expect(res.headers["content-type"]).toContain("application/problem+json")
  expect(res.headers["x-request-id"]).toMatch(/^req_/)
  expect(res.json.request_id).toBe(res.headers["x-request-id"])
}
