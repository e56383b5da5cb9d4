// Runs before `npm run server` / `npm run worker` / `npm run migrate`: they start the compiled output, which only
// `npm run build` produces. One line saying what to do beats Node's ERR_MODULE_NOT_FOUND trace.
import { existsSync } from "node:fs"

for (const entry of ["dist/main.js", "dist/worker.js", "dist/migrate.js"]) {
  if (!existsSync(entry)) {
    process.stderr.write(
      `authservice: ${entry} is missing; run \`npm run build\` first (or \`npm start\` for development)\n`,
    )
    process.exit(1)
  }
}
