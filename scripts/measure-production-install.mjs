// `npm run measure:production`: what a production install of this package weighs, installed as
// the image installs it. Copies package.json and the lockfile to a temporary folder and measures
//   - `npm ci --omit=dev`: the production dependency set as npm installs it, and
//   - the image's install: `npm ci --omit=dev --omit=optional` (leaves out pg-cloudflare), then
//     scripts/prune-production-install.mjs (type declarations, TypeScript sources, source maps),
// both with `--ignore-scripts` (the lifecycle scripts build the console and lib/hono, which need
// the development tools; the image copies their output from its build stage). Prints one JSON line
// of sizes on disk (as `du` counts them) in MB.
// `--keep <dir>`: only the image's install, into <dir>, left in place (test/ship runs the build in
// it). `--plain`: only `npm ci --omit=dev`. `--prefer-offline`: npm takes what its cache holds without asking the registry.
import { execFileSync } from "node:child_process"
import { copyFileSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { prune } from "./prune-production-install.mjs"

const ROOT = resolve(fileURLToPath(new URL("..", import.meta.url)))
const args = process.argv.slice(2)
const keepAt = args.includes("--keep") ? resolve(args[args.indexOf("--keep") + 1]) : undefined

/** The install flags of the image's runtime stage (the Dockerfile runs exactly these; test/ship checks it). */
export const IMAGE_INSTALL = ["ci", "--omit=dev", "--omit=optional", "--ignore-scripts", "--no-audit", "--no-fund"]

/** Bytes on disk below `path` (512-byte blocks, as `du`; links are not followed). */
const sizeOf = (path) => {
  const stat = lstatSync(path)
  if (!stat.isDirectory()) return stat.blocks * 512
  return readdirSync(path).reduce((sum, name) => sum + sizeOf(join(path, name)), stat.blocks * 512)
}
const mb = (bytes) => Math.round(bytes / 1e5) / 10

const install = (dir, flags) => {
  mkdirSync(dir, { recursive: true })
  for (const file of ["package.json", "package-lock.json"]) copyFileSync(join(ROOT, file), join(dir, file))
  const npm = process.platform === "win32" ? "npm.cmd" : "npm"
  const extra = ["--loglevel=error", ...(args.includes("--prefer-offline") ? ["--prefer-offline"] : [])]
  execFileSync(npm, [...flags, ...extra], { cwd: dir, stdio: ["ignore", "ignore", "inherit"] })
}

const imageInstall = (dir) => {
  install(dir, IMAGE_INSTALL)
  prune(join(dir, "node_modules"))
  return mb(sizeOf(join(dir, "node_modules")))
}

const main = () => {
  if (keepAt !== undefined) {
    process.stdout.write(`${JSON.stringify({ image_install_mb: imageInstall(keepAt), dir: keepAt })}\n`)
    return
  }
  const plain = mkdtempSync(join(tmpdir(), "authservice-omit-dev-"))
  if (args.includes("--plain")) {
    try {
      install(plain, ["ci", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund"])
      process.stdout.write(`${JSON.stringify({ npm_ci_omit_dev_mb: mb(sizeOf(join(plain, "node_modules"))) })}\n`)
    } finally {
      rmSync(plain, { recursive: true, force: true })
    }
    return
  }
  const image = mkdtempSync(join(tmpdir(), "authservice-image-install-"))
  try {
    install(plain, ["ci", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund"])
    const npmCiOmitDev = mb(sizeOf(join(plain, "node_modules")))
    process.stdout.write(
      `${JSON.stringify({ npm_ci_omit_dev_mb: npmCiOmitDev, image_install_mb: imageInstall(image) })}\n`,
    )
  } finally {
    rmSync(plain, { recursive: true, force: true })
    rmSync(image, { recursive: true, force: true })
  }
}

// Run as a script, not when imported (test/ship reads IMAGE_INSTALL).
if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) main()
