// `prepare` (run by `npm install` / `npm ci` in this folder): builds the admin console
// (npm run build:console). It needs the development tools (TypeScript, Vite), which an install
// with `--omit=dev` leaves out: there it skips with one line and succeeds, since a production
// install runs a build made elsewhere (the image's build stage; docs/decisions/
// production-operation.md, "A production install carries no development tool"). The Hono
// helpers are their own package (packages/hono), built when packed.
import { execFileSync } from "node:child_process"
import { existsSync } from "node:fs"

const omitted = (process.env.npm_config_omit ?? "").split(/[\s,]+/).includes("dev")
if (omitted || !existsSync("node_modules/typescript/package.json")) {
  process.stderr.write(
    "authservice: development dependencies are not installed (--omit=dev): not building the console; run `npm run build` where they are\n",
  )
  process.exit(0)
}
const npm = process.platform === "win32" ? "npm.cmd" : "npm"
execFileSync(npm, ["run", "build:console"], { stdio: "inherit" })
