import { spawn, spawnSync } from "node:child_process"
import { createServer, type RequestListener, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import type { Browser, Page } from "playwright-core"
import { expect } from "vitest"
import { launchChromium } from "../support/browser.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { type SmtpSink, startSmtpSink, uniqueEmail } from "../login/support.js"

/**
 * What every relying-party library test needs (docs/decisions/rp-libraries.md): the real server with its worker
 * (the OTP mail job), a real SMTP sink, one Environment and a real Chromium. Each library
 * runs unmodified; a person signs in on Hosted Login with an Email OTP read from the sink.
 */
export interface Harness {
  readonly app: TestApp
  readonly env: Bootstrapped
  readonly smtp: SmtpSink
  readonly browser: Browser
  readonly close: () => Promise<void>
}

export const startHarness = async (): Promise<Harness> => {
  const smtp = await startSmtpSink()
  const app = await startApp({ worker: true, env: { SMTP_URL: smtp.url } })
  const env = await app.bootstrap()
  const browser = await launchChromium()
  return {
    app,
    env,
    smtp,
    browser,
    close: async () => {
      await browser.close()
      await app.close()
      await smtp.close()
    },
  }
}

/** An HTTP server on loopback (the relying party's own app); `base` is its origin. */
export const listen = async (
  handler: RequestListener,
): Promise<{ readonly base: string; readonly server: Server; readonly close: () => Promise<void> }> => {
  const server = createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/**
 * The person's part on Hosted Login: the page the library redirected to, an email, the
 * code from the sink, "Not now" to the passkey offer (src/passkeys/hosted-login), then the
 * browser follows the redirect back to the relying party until `landed` says it is done.
 */
export const signInOnHostedLogin = async (h: Harness, page: Page, landed: (url: URL) => boolean, label: string) => {
  const email = uniqueEmail(label)
  await page.waitForURL((url) => url.host === h.env.interaction_domain, { timeout: 15_000 })
  await page.getByLabel("Email address").fill(email)
  await page.getByRole("button", { name: "Continue with email" }).click()
  const code = await h.smtp.waitForCode(email)
  await page.getByLabel("Code", { exact: true }).fill(code)
  await page.getByRole("button", { name: "Verify" }).click()
  const notNow = page.getByRole("button", { name: "Not now" })
  const offered = notNow.waitFor({ state: "visible", timeout: 15_000 }).then(
    () => true,
    () => false,
  )
  const back = page.waitForURL(landed, { timeout: 15_000 }).then(() => false)
  if (await Promise.race([offered, back])) await notNow.click()
  await page.waitForURL(landed, { timeout: 15_000 })
  return email
}

/** The JSON a page of the relying party shows (its `<pre id="out">` or raw JSON body). */
export const pageJson = async (page: Page) => {
  const text = await page.locator("body").innerText()
  try {
    return JSON.parse(text) as Record<string, any>
  } catch {
    expect.fail(`not JSON: ${text.slice(0, 500)}`)
  }
}

/**
 * A relying party in another language, run as its own process on loopback (the recipes of
 * docs/oidc-libraries.md beyond JavaScript). Resolves once `readyUrl` answers; its output is
 * kept for the failure message.
 */
export const startProcess = async (
  command: string,
  args: ReadonlyArray<string>,
  options: {
    readonly env: Record<string, string>
    readonly readyUrl: string
    readonly cwd?: string
    readonly timeoutMs?: number
  },
) => {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  })
  let output = ""
  child.stdout!.on("data", (chunk: Buffer) => {
    output += chunk.toString()
  })
  child.stderr!.on("data", (chunk: Buffer) => {
    output += chunk.toString()
  })
  let exited: number | null | undefined
  child.on("exit", (code) => {
    exited = code
  })
  const deadline = Date.now() + (options.timeoutMs ?? 30_000)
  for (;;) {
    if (exited !== undefined) throw new Error(`${command} exited with ${exited} before answering:\n${output}`)
    const answered = await fetch(options.readyUrl, { redirect: "manual" }).then(
      () => true,
      () => false,
    )
    if (answered) break
    if (Date.now() > deadline) {
      child.kill("SIGKILL")
      throw new Error(`${command} did not answer ${options.readyUrl} in time:\n${output}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return {
    output: () => output,
    close: async () => {
      if (exited !== undefined) return
      const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()))
      child.kill("SIGTERM")
      await Promise.race([gone, new Promise((resolve) => setTimeout(resolve, 5_000))])
      if (exited === undefined) child.kill("SIGKILL")
    },
  }
}

/**
 * Whether the Debian packages a recipe needs are installed (`dpkg-query`); .ci/run installs
 * them when it runs as root with apt. Answers the names that are missing.
 */
export const missingDebianPackages = (names: ReadonlyArray<string>): ReadonlyArray<string> =>
  names.filter((name) => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: ${Status} is dpkg-query's format, not a template
    const probe = spawnSync("dpkg-query", ["-W", "-f=${Status}", name], { encoding: "utf8" })
    return probe.status !== 0 || !probe.stdout.includes("install ok installed")
  })

/** The name of a suite that needs Debian packages: says, when it is skipped, what to install. */
export const suiteNeeding = (title: string, missing: ReadonlyArray<string>) =>
  missing.length === 0
    ? title
    : `${title} (SKIPPED: Debian packages not installed: ${missing.join(" ")}; run apt-get install -y --no-install-recommends ${missing.join(" ")})`
