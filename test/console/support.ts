import { mkdirSync } from "node:fs"
import { createRequire } from "node:module"
import type { BrowserContext, Page } from "playwright-core"
import { expect } from "vitest"
import type { TestApp } from "../support/app.js"

/** Where the console tests put their screenshots (not committed; README, "Admin console"). */
export const SCREENSHOTS = "test-results/console-screenshots"

export const consoleOrigin = (app: TestApp) => `http://${app.config.managementHost}`

/** The sign-in code of the newest message to `email` on the development mailbox page. */
export const codeFromDevMailbox = async (
  context: BrowserContext,
  interactionDomain: string,
  email: string,
  previous?: string,
) => {
  const mailbox = await context.newPage()
  try {
    for (let i = 0; i < 100; i++) {
      await mailbox.goto(`http://${interactionDomain}/login/dev-mailbox`)
      const items = await mailbox.locator("li").allInnerTexts()
      const mine = items.find((t) => t.startsWith(email))
      const code = mine === undefined ? undefined : /sign-in code is (\d{6})/.exec(mine)?.[1]
      if (code !== undefined && code !== previous) return code
      await mailbox.waitForTimeout(150)
    }
    throw new Error(`no sign-in code for ${email} in the development mailbox`)
  } finally {
    await mailbox.close()
  }
}

/** A CDP virtual authenticator (CTAP2, internal, resident keys, user verification). */
export const addVirtualAuthenticator = async (context: BrowserContext, page: Page) => {
  const cdp = await context.newCDPSession(page)
  await cdp.send("WebAuthn.enable", { enableUI: false })
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  })
  return { cdp, authenticatorId }
}

const axeSource = (() => {
  const require = createRequire(import.meta.url)
  return require("node:fs").readFileSync(require.resolve("axe-core/axe.min.js"), "utf8") as string
})()

/**
 * axe-core on the page as it stands: no violation of the serious or critical kind. The script
 * is evaluated through the DevTools protocol (the page's CSP forbids injected scripts, rightly).
 */
export const expectNoSeriousAxeViolations = async (page: Page, screen: string) => {
  await page.evaluate(axeSource)
  const violations = await page.evaluate(async () => {
    const axe = (
      globalThis as unknown as {
        axe: {
          run: (
            ctx: unknown,
            opts: unknown,
          ) => Promise<{
            violations: Array<{ id: string; impact: string; help: string; nodes: Array<{ target: unknown }> }>
          }>
        }
      }
    ).axe
    const result = await axe.run(document, { resultTypes: ["violations"] })
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      targets: v.nodes.map((n) => JSON.stringify(n.target)),
    }))
  })
  expect(
    violations.filter((v) => v.impact === "serious" || v.impact === "critical"),
    screen,
  ).toEqual([])
}

/** Screenshots at desktop width and at 390 px, and axe-core at both. */
export const captureScreen = async (page: Page, name: string) => {
  mkdirSync(SCREENSHOTS, { recursive: true })
  for (const [label, width] of [
    ["desktop", 1280],
    ["390px", 390],
  ] as const) {
    await page.setViewportSize({ width, height: 900 })
    // Usable at 390 px: nothing wider than the screen forces a horizontal scroll of the page.
    const overflow = await page.evaluate(
      () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
    )
    expect(overflow, `${name} at ${width}px scrolls sideways`).toBeLessThanOrEqual(0)
    await expectNoSeriousAxeViolations(page, `${name} (${label})`)
    await page.screenshot({ path: `${SCREENSHOTS}/${name}-${label}.png`, fullPage: true })
  }
  await page.setViewportSize({ width: 1280, height: 900 })
}

/**
 * Signs in to the console in `page` by Email OTP (code from the development mailbox), declining
 * the passkey the Hosted Login page offers; waits for the console to show `heading`.
 */
export const signInByEmail = async (
  app: TestApp,
  context: BrowserContext,
  page: Page,
  email: string,
  heading: string,
) => {
  await page.goto(`${consoleOrigin(app)}/console/`)
  await page.getByRole("link", { name: "Sign in" }).click()
  await page.waitForURL((u) => u.pathname === "/login")
  const interactionDomain = new URL(page.url()).host
  await page.getByLabel("Email address").fill(email)
  await page.getByRole("button", { name: "Continue with email" }).click()
  await page.getByLabel("Code", { exact: true }).waitFor()
  await page.getByLabel("Code", { exact: true }).fill(await codeFromDevMailbox(context, interactionDomain, email))
  await page.getByRole("button", { name: "Verify" }).click()
  await page.getByRole("button", { name: "Not now" }).click()
  await page.waitForURL((u) => u.host === app.config.managementHost && u.pathname.startsWith("/console/"))
  await page.getByRole("heading", { name: heading }).waitFor()
  return interactionDomain
}

/**
 * The first Owner signs in, creates the Workspace "Acme" and in it the Project "Shop" with the
 * test Environment "Staging", all through the console; returns their ids and the Environment's
 * label in the console's pickers.
 */
export const ownerWithEnvironment = async (app: TestApp, context: BrowserContext, page: Page, email: string) => {
  await signInByEmail(app, context, page, email, "Create a Workspace")
  await page.getByLabel("Name", { exact: true }).fill("Acme")
  await page.getByRole("button", { name: "Create Workspace" }).click()
  await page.getByRole("heading", { name: "Projects and apps" }).waitFor()
  const workspaceId = /wsp_[a-z2-7]{32}/.exec(page.url())![0]
  await page.getByLabel("New project name").fill("Shop")
  await page.getByRole("button", { name: "Create project" }).click()
  await page.getByLabel("New environment name").fill("Staging")
  const created = page.waitForResponse((r) => r.url().endsWith("/v1/environments") && r.request().method() === "POST")
  await page.getByRole("button", { name: "Create environment" }).click()
  const environmentId: string = (await (await created).json()).id
  await page.getByRole("heading", { name: "Register a client" }).waitFor()
  return { workspaceId, environmentId, environmentLabel: "Shop / Staging (test)" }
}
