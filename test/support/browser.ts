import { chromium } from "playwright-core"

/**
 * Debian's chromium, headless, as root (--no-sandbox), with background networking off:
 * this machine's network is closed, and Chromium resolves *.localhost to loopback itself.
 */
export const launchChromium = () => chromium.launch({
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
})
