import { satisfiesEngines, unsupportedNodeMessage } from "./platform/supported-node.js"

// Imported FIRST by every entry point (server, worker, migrate, `npm start`): ES modules run in
// import order, so this check runs before the rest of the application is evaluated and an old Node
// gets one line and exit code 1 instead of a stack trace from deep in a dependency.
if (!satisfiesEngines(process.versions.node)) {
  process.stderr.write(`${unsupportedNodeMessage(`v${process.versions.node}`)}\n`)
  process.exit(1)
}
