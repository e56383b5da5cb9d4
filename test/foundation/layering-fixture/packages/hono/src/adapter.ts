// Breaks hono-ships-alone: the package imports the server.
import { clock } from "../../../src/platform/clock.js"

export const adapter = clock
