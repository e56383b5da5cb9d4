// Breaks no-circular: a.ts and b.ts import each other.
import { b } from "./b.js"

export const a = () => b
