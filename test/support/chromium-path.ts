import { accessSync, constants, statSync } from "node:fs"
import { delimiter, join } from "node:path"
import { chromium } from "playwright-core"
import { type PackagedChromium, unpackPackagedChromium } from "./chromium-unpack.js"

export interface BrowserBinary {
  readonly executablePath: string
  /** Extra shared-library folder, set only when the browser needs a library the system lacks. */
  readonly libraryPath: string | undefined
}

/** The browser the tests use, or why there is none (only the browser tests fail then, with this message). */
export type BrowserResolution = BrowserBinary | { readonly error: string }

/** Names under which distributions and Google install Chromium or Chrome. */
export const SYSTEM_BROWSERS = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"] as const

/**
 * As root (--no-sandbox), with background networking off: this machine's network is closed, and
 * Chromium resolves *.localhost to loopback itself.
 */
export const launchOptions = (binary: BrowserBinary) => ({
  executablePath: binary.executablePath,
  headless: true,
  ...(binary.libraryPath === undefined
    ? {}
    : {
        env: {
          ...process.env,
          LD_LIBRARY_PATH: [process.env["LD_LIBRARY_PATH"], binary.libraryPath].filter(Boolean).join(":"),
        },
      }),
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
  ],
})

/** A browser is usable when it launches and opens a page, not when a file merely exists. */
const launches = async (binary: BrowserBinary): Promise<string | undefined> => {
  try {
    const browser = await chromium.launch({ ...launchOptions(binary), timeout: 30_000 })
    try {
      await (await browser.newPage()).close()
    } finally {
      await browser.close()
    }
    return undefined
  } catch (error) {
    return String((error as Error).message ?? error).split("\n")[0]
  }
}

const onPath = (name: string, path: string): string | undefined => {
  for (const dir of path.split(delimiter).filter(Boolean)) {
    const file = join(dir, name)
    try {
      accessSync(file, constants.X_OK)
      if (statSync(file).isFile()) return file
    } catch {
      // Not in this folder.
    }
  }
  return undefined
}

export interface ResolveOptions {
  readonly env?: NodeJS.ProcessEnv
  readonly platform?: NodeJS.Platform
  readonly arch?: string
  readonly unpack?: () => Promise<PackagedChromium>
}

/**
 * The browser for the browser tests, so `npm install && npm test` needs no system browser and
 * no apt step where the registry package's browser runs, and still works where it does not:
 * 1. `CHROMIUM_PATH`, when set, and nothing else;
 * 2. the Chromium that `@sparticuz/chromium` carries in its tarball (Linux x64 only), unpacked
 *    once per package version (chromium-unpack.ts); first as it is, then with the package's
 *    own library bundle on the library path (a bare Debian image lacks NSS);
 * 3. a system browser on PATH (chromium, chromium-browser, google-chrome, google-chrome-stable).
 * Each candidate must launch; when none does, the error says what was tried and what to install.
 */
export const resolveBrowserBinary = async (options: ResolveOptions = {}): Promise<BrowserResolution> => {
  const env = options.env ?? process.env
  const tried: Array<string> = []
  const attempt = async (label: string, binary: BrowserBinary) => {
    const failure = await launches(binary)
    if (failure !== undefined) tried.push(`${label} (${binary.executablePath}): ${failure}`)
    return failure === undefined
  }
  const fromEnv = env["CHROMIUM_PATH"]
  if (fromEnv) {
    const binary = { executablePath: fromEnv, libraryPath: undefined }
    if (await attempt("CHROMIUM_PATH", binary)) return binary
    return {
      error: `CHROMIUM_PATH does not launch: ${tried.join("; ")}. Point it at a Chromium or Chrome executable, or unset it.`,
    }
  }
  const platform = options.platform ?? process.platform
  const arch = options.arch ?? process.arch
  if (platform === "linux" && arch === "x64") {
    try {
      const packaged = await (options.unpack ?? unpackPackagedChromium)()
      const plain = { executablePath: packaged.executablePath, libraryPath: undefined }
      if (await attempt("@sparticuz/chromium", plain)) return plain
      const withLibraries = { executablePath: packaged.executablePath, libraryPath: packaged.libraryPath }
      if (await attempt("@sparticuz/chromium with its libraries", withLibraries)) return withLibraries
    } catch (error) {
      tried.push(`@sparticuz/chromium: ${String((error as Error).message ?? error).split("\n")[0]}`)
    }
  } else {
    tried.push(`@sparticuz/chromium: ships a browser for Linux x64 only, this is ${platform} ${arch}`)
  }
  for (const name of SYSTEM_BROWSERS) {
    const file = onPath(name, env["PATH"] ?? "")
    if (file === undefined) continue
    const binary = { executablePath: file, libraryPath: undefined }
    if (await attempt(name, binary)) return binary
  }
  tried.push(`no ${SYSTEM_BROWSERS.join(", ")} on PATH`)
  return {
    error:
      `No browser for the browser tests. Tried: ${tried.join("; ")}. ` +
      "Install Chromium or Google Chrome (Debian/Ubuntu: apt-get install chromium; macOS: install Google Chrome and set CHROMIUM_PATH) " +
      "so that one of those names is on PATH, or set CHROMIUM_PATH to its executable.",
  }
}
