// `npm run build` starts from an empty dist/, so a module deleted from src/ cannot linger there.
import { rmSync } from "node:fs"

rmSync("dist", { recursive: true, force: true })
