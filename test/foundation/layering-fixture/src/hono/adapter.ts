// Breaks hono-ships-alone: the adapter imports the server.
import { clock } from "../platform/clock.js"

export const adapter = clock
