import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, expect, it } from "vitest"
import { Tenancy } from "../../src/tenancy/service.js"
import { type TestApp, startApp } from "../support/app.js"

let app: TestApp
beforeAll(async () => {
  app = await startApp()
})
afterAll(async () => {
  await app?.close()
})

it("request handlers read the TestClock: an API key stops working when the clock passes its expiry", async () => {
  const b = await app.bootstrap()
  const key = await app.run(
    Effect.gen(function* () {
      const tenancy = yield* Tenancy
      const sql = yield* SqlClient.SqlClient
      return yield* sql.withTransaction(
        tenancy.createApiKey({
          workspaceId: b.workspace_id,
          environmentId: null,
          name: "short",
          scopes: ["workspaces:read"],
          expiresAt: new Date(app.now() + 60_000),
        }),
      )
    }),
  )
  expect((await app.management(`/v1/workspaces/${b.workspace_id}`, { key: key.secret })).status).toBe(200)
  await app.advance("61 seconds")
  const res = await app.management(`/v1/workspaces/${b.workspace_id}`, { key: key.secret })
  expect(res.status).toBe(401)
  expect(res.json.code).toBe("unauthorized")
})
