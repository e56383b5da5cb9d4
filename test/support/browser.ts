import { inject } from "vitest"
import { chromium } from "playwright-core"

/**
 * Headless Chromium (resolved once per run by the global setup: see chromium-path.ts), as root
 * (--no-sandbox), with background networking off: this machine's network is closed, and
 * Chromium resolves *.localhost to loopback itself.
 */
export const launchChromium = () => {
  const { executablePath, libraryPath } = inject("browserBinary")
  const env = libraryPath === undefined
    ? undefined
    : { ...process.env, LD_LIBRARY_PATH: [process.env["LD_LIBRARY_PATH"], libraryPath].filter(Boolean).join(":") }
  return chromium.launch({
    executablePath,
    headless: true,
    ...(env ? { env } : {}),
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  })
}
