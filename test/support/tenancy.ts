import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { createDashboardSessionCommand, createPlatformUserCommand } from "../../src/operator/platform-users.js"
import type { Role } from "../../src/operator/roles.js"
import { Tenancy } from "../../src/tenancy/service.js"
import type { TestApp } from "./app.js"

/** An API key made through Tenancy, optionally pinned to one Environment. */
export const makeKey = (
  app: TestApp,
  input: { workspaceId: string; environmentId?: string | null; scopes: ReadonlyArray<string> },
) =>
  app.run(
    Effect.gen(function* () {
      const tenancy = yield* Tenancy
      const sql = yield* SqlClient.SqlClient
      const key = yield* sql.withTransaction(
        tenancy.createApiKey({
          workspaceId: input.workspaceId,
          environmentId: input.environmentId ?? null,
          name: "test key",
          scopes: input.scopes,
          expiresAt: null,
        }),
      )
      return key.secret
    }),
  )

/** A second Environment in an existing Project. */
export const makeEnvironment = (app: TestApp, workspaceId: string, projectId: string) =>
  app.run(
    Effect.gen(function* () {
      const tenancy = yield* Tenancy
      const sql = yield* SqlClient.SqlClient
      const env = yield* sql.withTransaction(
        tenancy.createEnvironment({ workspaceId, projectId, type: "test", name: "Second" }),
      )
      return env.id
    }),
  )

/**
 * A platform user of the Workspace (Owner by default) signed in, as the operator commands
 * `platform-user create` and `dashboard-session create` do it: its `dsh_...` secret, for the
 * Dashboard-only routes (POST /v1/workspaces, members, impersonation) as `Authorization: Bearer`.
 */
export const makeDashboardSession = (app: TestApp, input: { email: string; workspaceId: string; role?: Role }) =>
  app.run(
    Effect.gen(function* () {
      yield* createPlatformUserCommand({
        email: input.email,
        workspaceId: input.workspaceId,
        role: input.role ?? "owner",
      })
      return (yield* createDashboardSessionCommand(app.config, input.email)).dashboard_session
    }),
  )
