import { readFileSync } from "node:fs"

/**
 * The Node versions this build runs on: `engines.node` of package.json, which sits at the package
 * root one level above both src/ and dist/. Only the form `>=MAJOR.MINOR[.PATCH]` is used, so no
 * semver library is needed at start (test/ship/node-version.test.ts keeps package.json to it).
 */
export const ENGINES_RANGE: string = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"))
  .engines.node

const parts = (version: string) => version.replace(/^v/, "").split(".").map(Number)

/** Whether `version` (`v22.19.0` or `22.19.0`) satisfies a `>=X.Y[.Z]` range; another form is refused loudly. */
export const satisfiesEngines = (version: string, range: string = ENGINES_RANGE): boolean => {
  const m = /^>=\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(range.trim())
  if (!m) throw new Error(`package.json engines.node must have the form >=MAJOR.MINOR (got "${range}")`)
  const wanted = [Number(m[1]), Number(m[2] ?? 0), Number(m[3] ?? 0)]
  const have = parts(version)
  for (let i = 0; i < 3; i++) {
    if ((have[i] ?? 0) !== wanted[i]) return (have[i] ?? 0) > wanted[i]!
  }
  return true
}

/** The one line an unsupported Node gets, naming both versions and what to do. */
export const unsupportedNodeMessage = (version: string, range: string = ENGINES_RANGE) =>
  `authservice: Node ${version} is not supported; this build needs Node ${range} (package.json engines): install a supported Node or use the container image`
