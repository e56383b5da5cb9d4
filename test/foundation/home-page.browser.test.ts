import { afterAll, beforeAll, expect, it } from "vitest"
import type { Browser } from "playwright-core"
import { launchChromium } from "../support/browser.js"
import { type TestApp, startApp } from "../support/app.js"

// `/` of the service's hosts in a real Chromium: the page a person sees when they open the
// address `npm start` printed (docs/decisions/foundation.md, "The first hour"). Headless Chromium
// asks for no favicon: /favicon.ico is proven over HTTP in first-hour.test.ts.

let app: TestApp
let browser: Browser

beforeAll(async () => {
  app = await startApp()
  browser = await launchChromium()
}, 60_000)
afterAll(async () => {
  await browser?.close()
  await app?.close()
})

it("renders styled under its CSP (no violation) and links the console, the API reference and the OpenAPI document", async () => {
  const context = await browser.newContext()
  try {
    const page = await context.newPage()
    const problems: Array<string> = []
    page.on("console", (m) => {
      if (m.type() === "error") problems.push(m.text())
    })
    page.on("pageerror", (e) => problems.push(e.message))
    const base = `http://api.localhost:${app.port}`
    await page.goto(`${base}/`)
    await expect.poll(() => page.getByRole("heading", { name: "authservice" }).isVisible()).toBe(true)
    for (const [name, href] of [
      ["Admin console", `${base}/console/`],
      ["API reference", `${base}/v1/reference`],
      ["OpenAPI document", `${base}/v1/openapi.json`],
    ] as const)
      expect(await page.getByRole("link", { name }).getAttribute("href")).toBe(href)
    // The links lead somewhere: the reference page and the document answer (the console has its own tests).
    for (const path of ["/v1/reference", "/v1/openapi.json"])
      expect((await app.request(`api.localhost:${app.port}`, path)).status, path).toBe(200)
    // The inlined Hosted Login stylesheet applied: the card has its border radius.
    expect(await page.locator("main.card").evaluate((el) => getComputedStyle(el).borderTopLeftRadius)).not.toBe("0px")
    expect(problems).toEqual([])
  } finally {
    await context.close()
  }
}, 60_000)
