import { inject } from "vitest"
import { chromium } from "playwright-core"
import { launchOptions } from "./chromium-path.js"

/**
 * Headless Chromium, resolved once per run by the global setup (chromium-path.ts). When no
 * browser launches there, only the tests that need one fail, with the setup's message saying
 * what was tried and what to install.
 */
export const launchChromium = () => {
  const resolved = inject("browserBinary")
  if ("error" in resolved) throw new Error(resolved.error)
  return chromium.launch(launchOptions(resolved))
}
