// The package's own entry: importing its own files is allowed.
export { adapter } from "./adapter.js"
