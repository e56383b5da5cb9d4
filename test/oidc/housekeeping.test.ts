import { afterAll, beforeAll, expect, it } from "vitest"
import { housekeeping } from "../../src/jobs/housekeeping.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import {
  createClient,
  createUser,
  exchangeCode,
  mintCode,
  postForm,
  queryRows,
  refresh,
  type TestClient,
  type TestUser,
} from "./support.js"

let app: TestApp
let env: Bootstrapped
let spa: TestClient
let user: TestUser

beforeAll(async () => {
  app = await startApp()
  env = await app.bootstrap()
  spa = await createClient(app, env)
  user = await createUser(app, env)
})
afterAll(async () => {
  await app?.close()
})

it("housekeeping purges sealed winner responses after the 5-second window, ended families after 30 days, codes a day past expiry", async () => {
  const minted = await mintCode(app, env, spa, user)
  const first = await exchangeCode(app, env, spa, minted)
  const familyId = (first.json.refresh_token as string).slice(3, 39)
  const rotated = await refresh(app, env, spa, first.json.refresh_token)
  const grace = async () =>
    (
      await queryRows<{ sealed: string | null }>(
        app,
        "select grace_response_sealed as sealed from refresh_families where id = $1",
        [familyId],
      )
    )[0]?.sealed
  await app.run(housekeeping)
  expect(await grace()).toEqual(expect.stringMatching(/^v1\./)) // still inside the window
  await app.advance("6 seconds")
  await app.run(housekeeping)
  expect(await grace()).toBeNull()

  expect((await postForm(app, env, "/oauth2/revoke", { token: rotated.json.refresh_token })).status).toBe(200)
  const unused = await mintCode(app, env, spa, user)
  await app.advance("29 days")
  await app.run(housekeeping)
  expect(await queryRows(app, "select 1 from refresh_families where id = $1", [familyId])).toHaveLength(1)
  expect(
    await queryRows(app, "select 1 from authorization_codes where session_id = $1", [unused.sessionId]),
  ).toHaveLength(0)
  await app.advance("2 days")
  await app.run(housekeeping)
  expect(await queryRows(app, "select 1 from refresh_families where id = $1", [familyId])).toHaveLength(0)
  expect(await queryRows(app, "select 1 from refresh_tokens where family_id = $1", [familyId])).toHaveLength(0)
})
