// Loaded with `node --import` (NODE_OPTIONS) into a child process: writes one stderr line,
// `loaded <what>`, the first time the process resolves a module of Effect or the application's
// layer (src/runtime.ts), so a test can tell what a command line made the process load.
import { registerHooks } from "node:module"

const seen = new Set()
registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context)
    const what = /\/node_modules\/effect\/|\/src\/runtime\.ts$/.exec(resolved.url)?.[0]
    if (what !== undefined && !seen.has(what)) {
      seen.add(what)
      process.stderr.write(`loaded ${what}\n`)
    }
    return resolved
  },
})
