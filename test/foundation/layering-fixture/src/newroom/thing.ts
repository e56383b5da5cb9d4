// Breaks every-room-has-a-floor: a new top-level folder that no floor lists.
import { clock } from "../platform/clock.js"

export const thing = clock
