import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, expect, it } from "vitest"
import { launchChromium } from "../support/browser.js"
import { type TestApp, startApp } from "../support/app.js"
import { codeFromDevMailbox, consoleOrigin } from "./support.js"

// Chromium against the real server, by keyboard alone (Tab, typing and Enter, no pointer): the
// first Owner signs in through Hosted Login with Email OTP, creates a Workspace and a Project.

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

/** Presses Tab until the focused element's label (aria-label, <label> or text) matches `name`. */
const tabTo = async (page: Page, name: RegExp) => {
  for (let i = 0; i < 60; i++) {
    await page.keyboard.press("Tab")
    const label = await page.evaluate(() => {
      const e = document.activeElement as HTMLInputElement | null
      if (e === null || e === document.body) return ""
      return (e.getAttribute("aria-label") ?? e.labels?.[0]?.innerText ?? e.innerText ?? "").trim()
    })
    if (name.test(label)) return
  }
  throw new Error(`Tab never reached ${name}`)
}

it("by keyboard alone: sign in with Email OTP, create a Workspace and a Project", async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  const page = await context.newPage()
  try {
    const email = "owner@example.com"
    await page.goto(`${consoleOrigin(app)}/console/`)
    await tabTo(page, /^Sign in$/)
    await page.keyboard.press("Enter")
    await page.waitForURL((u) => u.pathname === "/login")
    await tabTo(page, /^Email address/)
    await page.keyboard.type(email)
    await page.keyboard.press("Enter")
    await page.getByLabel("Code", { exact: true }).waitFor()
    const code = await codeFromDevMailbox(context, new URL(page.url()).host, email)
    await page.getByLabel("Code", { exact: true }).waitFor()
    await tabTo(page, /^Code$/)
    await page.keyboard.type(code)
    await page.keyboard.press("Enter")
    await page.getByRole("button", { name: "Not now" }).waitFor()
    await tabTo(page, /^Not now$/)
    await page.keyboard.press("Enter")
    await page.getByRole("heading", { name: "Create a Workspace" }).waitFor()
    await tabTo(page, /^Name/)
    await page.keyboard.type("Keyboard")
    await page.keyboard.press("Enter")
    await page.getByRole("heading", { name: "Projects and apps" }).waitFor()
    await tabTo(page, /^New project name/)
    await page.keyboard.type("Typed")
    await page.keyboard.press("Enter")
    await page.getByRole("button", { name: "Typed" }).waitFor()
    const workspaceId = /wsp_[a-z2-7]{32}/.exec(page.url())![0]
    const projects = await page.evaluate(
      (ws) => fetch(`/v1/projects?workspace_id=${ws}`, { headers: { "x-workspace-id": ws } }).then((r) => r.json()),
      workspaceId,
    )
    expect(projects.data.map((p: { name: string }) => p.name)).toEqual(["Typed"])
  } finally {
    await context.close()
  }
}, 120_000)
