// Part of `npm run build`: tsc emits only the TypeScript, so the files the server reads at
// run time next to its modules (Hosted Login CSS/JS, the passkey script) are copied beside the
// emitted JavaScript. Migrations stay in sql/ at the package root, which dist/ resolves as src/ does.
// Swagger UI's two files (a development dependency) go beside src/openapi/reference.ts's output.
import { cpSync, readdirSync, statSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname } from "node:path"
import { join, relative } from "node:path"

const SRC = "src"
// The output folder is dist/ unless given (the build test compiles into a folder of its own).
const OUT = process.argv[2] ?? "dist"

const walk = (dir) =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? walk(path) : [path]
  })

for (const file of walk(SRC)) {
  if (file.endsWith(".ts")) continue
  cpSync(file, join(OUT, relative(SRC, file)))
}

const swaggerUi = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"))
for (const file of ["swagger-ui-bundle.js", "swagger-ui.css"]) {
  cpSync(join(swaggerUi, file), join(OUT, "openapi", "swagger-ui", file))
}
