import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type TestApp, startApp } from "../support/app.js"

let app: TestApp
beforeAll(async () => {
  app = await startApp()
})
afterAll(async () => {
  await app?.close()
})

describe("smoke", () => {
  it("serves readyz and bootstrap", async () => {
    const res = await app.request(app.config.managementHost, "/readyz")
    expect(res.status).toBe(200)
    const b = await app.bootstrap()
    const ws = await app.management(`/v1/workspaces/${b.workspace_id}`)
    expect(ws.status).toBe(200)
    const before = app.now()
    await app.advance("10 minutes")
    expect(app.now() - before).toBe(600_000)
  })
})
