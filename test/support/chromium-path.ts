import { execFileSync } from "node:child_process"
import { existsSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import chromium, { inflate } from "@sparticuz/chromium"

export interface BrowserBinary {
  readonly executablePath: string
  /** Extra shared-library folder, set only when the system lacks a library the binary needs. */
  readonly libraryPath: string | undefined
}

const missingLibraries = (executable: string): boolean => {
  try {
    return execFileSync("ldd", [executable], { encoding: "utf8" }).includes("not found")
  } catch {
    return false
  }
}

/**
 * The browser for the browser tests. `CHROMIUM_PATH` wins; otherwise the Chromium that the
 * `@sparticuz/chromium` registry package carries in its tarball, unpacked once per run into the
 * temporary folder, so `npm install && npm test` needs no system browser and no apt step. When
 * the machine lacks a shared library the binary needs (a bare Debian image has no NSS), the
 * package's own library bundle is unpacked too and put on the browser's library path.
 */
export const resolveBrowserBinary = async (): Promise<BrowserBinary> => {
  const fromEnv = process.env["CHROMIUM_PATH"]
  if (fromEnv) return { executablePath: fromEnv, libraryPath: undefined }
  const executablePath = await chromium.executablePath()
  if (!missingLibraries(executablePath)) return { executablePath, libraryPath: undefined }
  const libraryPath = join(tmpdir(), "al2023", "lib")
  if (!existsSync(libraryPath)) {
    const bin = join(import.meta.dirname, "..", "..", "node_modules", "@sparticuz", "chromium", "bin")
    await inflate(join(bin, "al2023.tar.br"))
  }
  return { executablePath, libraryPath }
}
