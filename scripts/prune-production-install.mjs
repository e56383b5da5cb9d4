// Part of the production install (the image's runtime stage, README "Run it in production"): removes
// from node_modules what `node` never reads at run time: type declarations (.d.ts, .d.mts, .d.cts),
// TypeScript sources shipped beside the JavaScript (effect carries its src/) and source maps. About
// half of what `npm ci --omit=dev` writes (scripts/measure-production-install.mjs prints both).
// Usage: node scripts/prune-production-install.mjs [node_modules folder]; prints one JSON line.
import { readdirSync, rmSync, lstatSync } from "node:fs"
import { join } from "node:path"
import { pathToFileURL } from "node:url"

const UNREAD = /\.(d\.[mc]?ts|[mc]?ts|map)$/

export const prune = (dir) => {
  let files = 0
  let bytes = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) {
      const below = prune(path)
      files += below.files
      bytes += below.bytes
    } else if (entry.isFile() && UNREAD.test(entry.name)) {
      bytes += lstatSync(path).size
      rmSync(path)
      files += 1
    }
  }
  return { files, bytes }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const { files, bytes } = prune(process.argv[2] ?? "node_modules")
  process.stdout.write(`${JSON.stringify({ pruned_files: files, pruned_mb: Math.round(bytes / 1e5) / 10 })}\n`)
}
