// Part of `npm install` (prepare) and `npm run build`: builds the admin console (web/console,
// React + Vite, a package of its own with its own lockfile) into web/console/dist, which the
// server serves under /console/. Its dependencies are installed from its lockfile when missing
// or older than the lockfile; nothing is fetched at run time.
import { execFileSync } from "node:child_process"
import { existsSync, statSync } from "node:fs"

const dir = "web/console"
const npm = process.platform === "win32" ? "npm.cmd" : "npm"
const run = (...args) => execFileSync(npm, args, { cwd: dir, stdio: "inherit" })
const marker = `${dir}/node_modules/.package-lock.json`
if (!existsSync(marker) || statSync(marker).mtimeMs < statSync(`${dir}/package-lock.json`).mtimeMs) {
  run("ci", "--no-audit", "--no-fund", "--loglevel=error")
}
run("run", "-s", "build")
