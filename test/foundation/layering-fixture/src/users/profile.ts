// Breaks no-upward-import: users (floor 6) climbs to me (floor 13), a climb CLIMBS does not name.
import { me } from "../me/view.js"

export const profile = me
