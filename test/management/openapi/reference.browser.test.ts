import type { Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { REFERENCE_CSP } from "../../../src/openapi/reference.js"
import { startApp, type TestApp } from "../../support/app.js"
import { launchChromium } from "../../support/browser.js"

// GET /v1/reference on the Management host: the OpenAPI document rendered by the bundled
// Swagger UI under a strict CSP (no 'unsafe-eval', no inline script or style), in Chromium.
// (docs/decisions/management-api.md, "API reference")

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

describe("API reference page", () => {
  it("answers the page and only Swagger UI's two files, with the strict CSP", async () => {
    const page = await app.request(app.config.managementHost, "/v1/reference")
    expect(page.status).toBe(200)
    expect(page.headers["content-type"]).toBe("text/html; charset=utf-8")
    expect(page.headers["content-security-policy"]).toBe(REFERENCE_CSP)
    expect(REFERENCE_CSP).not.toMatch(/unsafe-eval|unsafe-inline|https?:/)
    expect(page.text).not.toMatch(/<script>|<style|https?:\/\//)
    const bundle = await app.request(app.config.managementHost, "/v1/reference/swagger-ui-bundle.js")
    expect(bundle.status).toBe(200)
    expect(bundle.headers["content-type"]).toBe("text/javascript; charset=utf-8")
    for (const other of ["swagger-ui-bundle.js.map", "index.html", "package.json", "..%2Fpackage.json"]) {
      expect((await app.request(app.config.managementHost, `/v1/reference/${other}`)).status, other).toBe(404)
    }
  })

  it("renders the document's operations in Chromium with no CSP violation and no request off the host", async () => {
    const context = await browser.newContext()
    const page = await context.newPage()
    const problems: Array<string> = []
    const offHost: Array<string> = []
    page.on("console", (m) => {
      if (m.type() === "error" || /Content Security Policy/i.test(m.text())) problems.push(m.text())
    })
    page.on("pageerror", (e) => problems.push(e.message))
    page.on("request", (r) => {
      if (new URL(r.url()).host !== app.config.managementHost && !r.url().startsWith("data:")) offHost.push(r.url())
    })
    await page.goto(`http://${app.config.managementHost}/v1/reference`)
    const operation = page.locator(".opblock", { hasText: "/v1/clients/{clientId}" }).first()
    await operation.waitFor({ timeout: 20_000 })
    expect(await page.locator(".opblock-summary-method").count()).toBeGreaterThan(100)
    await expect
      .poll(() => page.locator(".opblock-summary-description", { hasText: "Create an Environment" }).count())
      .toBeGreaterThan(0)
    expect(await page.locator(".info .title").innerText()).toContain(
      "authservice Public Authentication and Management APIs",
    )
    // read-only: no "Try it out" (it would reach the issuer host, which the CSP does not allow)
    await page.locator(".opblock-summary", { hasText: "Create an Environment" }).first().click()
    await page.locator(".opblock.is-open").first().waitFor()
    expect(await page.locator(".try-out__btn").count()).toBe(0)
    expect(problems).toEqual([])
    expect(offHost).toEqual([])
    await context.close()
  }, 60_000)
})
