import { type ChildProcess, spawn } from "node:child_process"
import { join } from "node:path"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, expect, it } from "vitest"
import { freePort } from "../../src/platform/free-port.js"
import { launchChromium } from "../support/browser.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { uniqueEmail } from "../login/support.js"

// The README's quickstart, as a newcomer runs it: a web_spa Client registered over the
// Management API with the CLI's loopback redirect URI, `npm run -s cli -- login`, the printed
// URL opened in a real browser, the code read from the development mailbox (no SMTP_URL).

const TSX = join(process.cwd(), "node_modules/.bin/tsx")
let app: TestApp
let b: Bootstrapped
let browser: Browser
let cli: ChildProcess | undefined

beforeAll(async () => {
  app = await startApp({ worker: true })
  b = await app.bootstrap()
  browser = await launchChromium()
}, 60_000)
afterAll(async () => {
  if (cli && cli.exitCode === null) cli.kill("SIGKILL")
  await browser?.close()
  await app?.close()
})

/** The newest code for `email` on the development mailbox page. */
const codeFromDevMailbox = async (email: string) => {
  const deadline = Date.now() + 15_000
  for (;;) {
    const page = await app.request(b.interaction_domain, "/login/dev-mailbox")
    const item = page.text.split("<li>").find((li) => li.includes(email))
    const m = item && /sign-in code is (\d{6})/.exec(item)
    if (m) return m[1]!
    if (Date.now() > deadline) throw new Error(`no code for ${email} in the development mailbox`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

const landOnCallback = async (page: Page) => {
  const notNow = page.getByRole("button", { name: "Not now" })
  const offered = notNow.waitFor({ state: "visible", timeout: 15_000 }).then(
    () => true,
    () => false,
  )
  const landed = page.waitForURL((url) => url.pathname === "/callback", { timeout: 15_000 }).then(() => false)
  if (await Promise.race([offered, landed])) await notNow.click()
  await page.waitForURL((url) => url.pathname === "/callback", { timeout: 15_000 })
}

it("`npm run -s cli -- login`: PKCE through the browser and Hosted Login, then one JSON object with the tokens on stdout", async () => {
  const port = await freePort()
  const registered = await app.management("/v1/clients", {
    method: "POST",
    body: {
      environment_id: b.environment_id,
      client_type: "web_spa",
      name: "CLI",
      token_endpoint_auth_method: "none",
      redirect_uris: [`http://127.0.0.1:${port}/callback`],
    },
  })
  expect(registered.status, registered.text).toBe(201)

  cli = spawn(
    TSX,
    ["src/cli.ts", "login", "--issuer", b.issuer, "--client-id", registered.json.id, "--port", String(port)],
    {
      env: { PATH: process.env["PATH"]!, HOME: process.env["HOME"] ?? "/root" },
      stdio: ["ignore", "pipe", "pipe"],
    },
  )
  let stdout = ""
  let stderr = ""
  cli.stdout!.on("data", (c: Buffer) => {
    stdout += c
  })
  cli.stderr!.on("data", (c: Buffer) => {
    stderr += c
  })
  const exited = new Promise<number | null>((resolve) => cli!.on("exit", resolve))
  const deadline = Date.now() + 30_000
  while (!/https?:\/\/\S+\/oauth2\/authorize\?\S+/.test(stderr)) {
    if (Date.now() > deadline || cli.exitCode !== null) throw new Error(`no authorize URL: ${stderr}`)
    await new Promise((r) => setTimeout(r, 100))
  }
  const authorizeUrl = new URL(/https?:\/\/\S+\/oauth2\/authorize\?\S+/.exec(stderr)![0])
  expect(authorizeUrl.searchParams.get("code_challenge_method")).toBe("S256")
  expect(authorizeUrl.searchParams.get("redirect_uri")).toBe(`http://127.0.0.1:${port}/callback`)

  const email = uniqueEmail("newcomer")
  const page = await (await browser.newContext()).newPage()
  await page.goto(authorizeUrl.href)
  await page.getByLabel("Email address").fill(email)
  await page.getByRole("button", { name: "Continue with email" }).click()
  await page.getByLabel("Code", { exact: true }).fill(await codeFromDevMailbox(email))
  await page.getByRole("button", { name: "Verify" }).click()
  await landOnCallback(page)
  expect(await page.textContent("body")).toContain("Signed in")

  expect(await exited, stderr).toBe(0)
  const tokens = JSON.parse(stdout)
  expect(tokens).toMatchObject({ token_type: "bearer", scope: "openid email offline_access" })
  expect(tokens.access_token).toMatch(/^eyJ/)
  expect(tokens.refresh_token).toMatch(/^rt_/)
  expect(tokens.claims).toMatchObject({ iss: b.issuer, aud: registered.json.id, email, amr: ["email_otp"] })
  // The tokens work: UserInfo answers for this user.
  const info = await app.issuer(b.environment_id, "/oauth2/userinfo", {
    headers: { authorization: `Bearer ${tokens.access_token}` },
  })
  expect([info.status, info.json.email]).toEqual([200, email])
}, 90_000)

it("refuses missing flags with one line of usage, exit 2 (wrong use)", async () => {
  const child = spawn(TSX, ["src/cli.ts", "login", "--issuer", "not-a-url"], {
    env: { PATH: process.env["PATH"]! },
    stdio: ["ignore", "pipe", "pipe"],
  })
  let stderr = ""
  child.stderr!.on("data", (c: Buffer) => {
    stderr += c
  })
  expect(await new Promise((resolve) => child.on("exit", resolve))).toBe(2)
  expect(stderr.trim().split("\n")).toHaveLength(1)
  expect(stderr).toContain(
    "--issuer (an http(s) URL) and --client-id are required; usage: npm run cli -- login --issuer URL --client-id ID",
  )
})
