// Breaks server-without-hono-package: the server imports the Hono package.
import { adapter } from "../../../packages/hono/src/index.js"

export const wired = adapter
