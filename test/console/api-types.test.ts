import { afterAll, beforeAll, expect, it } from "vitest"
// @ts-expect-error: a plain ES module of the console package (openapi-typescript, its own dependency)
import { apiTypesOf } from "../../web/console/scripts/api-types-of.mjs"
import { type TestApp, startApp } from "../support/app.js"

// The console's API types are generated from the OpenAPI document the service serves; when a
// route changes, this fails until they are generated again: `npx vitest run test/console/api-types.test.ts -u`
// (or web/console/scripts/api-types.mjs against a running server).

let app: TestApp
beforeAll(async () => {
  app = await startApp()
}, 60_000)
afterAll(async () => {
  await app?.close()
})

it("web/console/src/api/schema.d.ts is what openapi-typescript makes of the served document", async () => {
  const served = await app.management("/v1/openapi.json")
  expect(served.status).toBe(200)
  const generated: string = await apiTypesOf(served.json)
  await expect(generated, "The console's API types are stale: run this test with -u").toMatchFileSnapshot(
    "../../web/console/src/api/schema.d.ts",
  )
})
