import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { Tenancy } from "../../src/tenancy/service.js"
import type { TestApp } from "./app.js"

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
