import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { createPlatformUser, mintDashboardSession } from "../../../src/management/auth/dashboard.js"
import { Tenancy } from "../../../src/tenancy/service.js"
import type { TestApp } from "../../support/app.js"

let counter = 0

/**
 * A Dashboard user (optionally a member of a Workspace with a role) and a session token for it;
 * `headers` are those of a Dashboard request (`Authorization: Bearer`, and `X-Workspace-Id` for a member).
 */
export const dashboardUser = (app: TestApp, membership?: { workspaceId: string; role: "owner" | "admin" | "member" }) =>
  app.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      return yield* sql.withTransaction(
        Effect.gen(function* () {
          const id = yield* createPlatformUser(`user-${process.pid}-${++counter}@dashboard.example`, membership)
          const token = yield* mintDashboardSession(id)
          const headers: Record<string, string> = {
            authorization: `Bearer ${token}`,
            ...(membership ? { "x-workspace-id": membership.workspaceId } : {}),
          }
          return { id, token, headers }
        }),
      )
    }),
  )

/** An API key made directly through Tenancy (the way bootstrap makes its key), with the whole record. */
export const apiKey = (
  app: TestApp,
  input: {
    workspaceId: string
    environmentId?: string | null
    scopes: ReadonlyArray<string>
    expiresAt?: Date | null
    name?: string
  },
) =>
  app.run(
    Effect.gen(function* () {
      const tenancy = yield* Tenancy
      const sql = yield* SqlClient.SqlClient
      return yield* sql.withTransaction(
        tenancy.createApiKey({
          workspaceId: input.workspaceId,
          environmentId: input.environmentId ?? null,
          name: input.name ?? "test key",
          scopes: input.scopes,
          expiresAt: input.expiresAt ?? null,
        }),
      )
    }),
  )

export { makeEnvironment, makeKey } from "../../support/tenancy.js"
