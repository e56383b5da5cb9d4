import { readFile } from "node:fs/promises"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, expect, it } from "vitest"
import { seedIdentity, seedPasskey, seedSession } from "../management/support/seed.js"
import { launchChromium } from "../support/browser.js"
import { type TestApp, startApp } from "../support/app.js"
import { captureScreen, ownerWithEnvironment } from "./support.js"

// Chromium against the real server: a user's detail in the console lists their identities,
// passkeys, live sessions and the newest audit events about them; one session and then all are
// revoked, the user's data export is made and downloaded, and the user is deleted once confirmed.
// The identity, passkey and sessions are seeded as sign-in would leave them (test/management/support/seed).

let app: TestApp
let browser: Browser

beforeAll(async () => {
  // The worker sends the sign-in code to the development mailbox.
  app = await startApp({ worker: true })
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await app?.close()
})

/** A Management API call from the console's page: its session cookie and Workspace, as the console calls. */
const fromConsole = (page: Page, workspaceId: string, path: string, method = "GET", body?: unknown) =>
  page.evaluate(
    async ([ws, p, m, b]) => {
      const response = await fetch(p as string, {
        method: m as string,
        headers: {
          "x-workspace-id": ws as string,
          "content-type": "application/json",
          ...(m === "POST" ? { "idempotency-key": crypto.randomUUID() } : {}),
        },
        ...(b === undefined ? {} : { body: JSON.stringify(b) }),
      })
      const text = await response.text()
      return { status: response.status, json: text === "" ? undefined : JSON.parse(text) }
    },
    [workspaceId, path, method, body] as const,
  )

it("user detail: identities, passkeys, sessions (one revoked, then all), recent events, the data export downloaded, the user deleted after confirming", async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  const page = await context.newPage()
  try {
    const { workspaceId, environmentId, environmentLabel } = await ownerWithEnvironment(
      app,
      context,
      page,
      "owner@example.com",
    )
    const created = await fromConsole(page, workspaceId, `/v1/users?environment_id=${environmentId}`, "POST", {
      email: "ada@example.com",
      name: "Ada",
    })
    expect(created.status).toBe(201)
    const userId: string = created.json.id
    const seed = { workspaceId, environmentId, userId }
    await seedIdentity(app, { ...seed, provider: "github" })
    await seedPasskey(app, seed)
    await seedSession(app, seed)
    await seedSession(app, seed)
    const liveSessions = async () =>
      (await fromConsole(page, workspaceId, `/v1/users/${userId}/sessions?environment_id=${environmentId}`)).json.data
        .length

    await page.getByRole("link", { name: "Users" }).click()
    await page.getByLabel("Environment").selectOption({ label: environmentLabel })
    await page.getByRole("button", { name: "ada@example.com" }).click()
    const detail = page.getByRole("region", { name: "User ada@example.com" })
    await detail.waitFor()
    const identities = detail.getByRole("table", { name: "Identities" })
    await identities.getByRole("row").nth(1).waitFor()
    expect(await identities.getByRole("row").nth(1).innerText()).toMatch(
      /^github\s+someone@gmail\.example\s+\S+\s+never$/,
    )
    expect(await detail.getByRole("table", { name: "Passkeys" }).getByRole("row").nth(1).innerText()).toMatch(
      /^My laptop\s+synced\s+\S+\s+never$/,
    )
    const sessions = detail.getByRole("table", { name: "Sessions" })
    expect(await sessions.getByRole("row").count()).toBe(3)
    expect(await sessions.getByRole("row").nth(1).innerText()).toMatch(/^device \d+\s+email_otp\s+\S+\s+Revoke$/)
    expect(await detail.getByRole("table", { name: "Recent events" }).getByRole("row").nth(1).innerText()).toMatch(
      /^\S+\s+user\.created\s+workspace_member\s+success$/,
    )
    await captureScreen(page, "user-detail-records")

    // One session revoked, confirmed in the dialog; Cancel first changes nothing.
    await sessions.getByRole("button", { name: "Revoke" }).first().click()
    await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click()
    expect(await liveSessions()).toBe(2)
    await sessions.getByRole("button", { name: "Revoke" }).first().click()
    await page.getByRole("dialog").getByRole("button", { name: "Revoke" }).click()
    await expect.poll(() => sessions.getByRole("row").count(), { timeout: 10_000 }).toBe(2)
    expect(await liveSessions()).toBe(1)

    // The data export: made by the API at once, downloaded as the JSON file it serves.
    await detail.getByRole("button", { name: "Export user data" }).click()
    const exportStatus = detail.getByRole("status", { name: "Export" })
    await exportStatus.waitFor()
    expect(await exportStatus.innerText()).toMatch(/^completed, \d+ bytes, download until \d{4}-\d\d-\d\dT/)
    const downloading = page.waitForEvent("download")
    await detail.getByRole("button", { name: "Download export" }).click()
    const file = await downloading
    expect(file.suggestedFilename()).toMatch(/^user-export-job_[a-z2-7]{32}\.json$/)
    const artifact = JSON.parse(await readFile((await file.path())!, "utf8"))
    expect(artifact).toMatchObject({
      format: "authservice.user-export",
      environment_id: environmentId,
      user: { id: userId, email: "ada@example.com", name: "Ada" },
      identities: [{ provider: "github" }],
      passkeys: [{ name: "My laptop" }],
    })
    expect(artifact.sessions).toHaveLength(2)

    // Every session revoked at once.
    await detail.getByRole("button", { name: "Revoke all sessions" }).click()
    await page.getByRole("dialog").getByRole("button", { name: "Revoke all sessions" }).click()
    await detail.getByText("No live session.").waitFor()
    expect(await liveSessions()).toBe(0)

    // Deleted once confirmed: pending deletion (purged after the retention period), recorded.
    await detail.getByRole("button", { name: "Delete user" }).click()
    await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click()
    const userStatus = async () =>
      (await fromConsole(page, workspaceId, `/v1/users/${userId}?environment_id=${environmentId}`)).json.status
    expect(await userStatus()).toBe("active")
    await detail.getByRole("button", { name: "Delete user" }).click()
    await page.getByRole("dialog").getByRole("button", { name: "Delete user" }).click()
    await detail.locator("dt:text('Status') + dd").filter({ hasText: "pending_deletion" }).waitFor()
    expect(await userStatus()).toBe("pending_deletion")
    expect(await detail.getByRole("button", { name: "Delete user" }).count()).toBe(0)
    await detail
      .getByRole("table", { name: "Recent events" })
      .getByRole("row")
      .filter({ hasText: "user.deleted" })
      .waitFor()
  } finally {
    await context.close()
  }
}, 120_000)
