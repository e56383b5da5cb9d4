// `npm run layering:report`: the figures of src/'s import graph, by the floors of .dependency-cruiser.cjs.
//
//   arrows     room pairs A -> B (A != B) with at least one import; `imports` counts the import
//              statements behind them (type-only ones included, as the rules count them)
//   climbs     arrows from a room to a room on a HIGHER floor (and imports between two rooms of the
//              same floor, which the rules forbid too); allowed ones are listed in CLIMBS
//   cycles     file-level import cycles (the no-circular rule)
//   violations every broken rule of .dependency-cruiser.cjs
//
// `--list` also prints every arrow. Exit code 0 whatever the figures: the gate is `npm run lint:layers`.
import { createRequire } from "node:module"
import { cruise } from "dependency-cruiser"
import extractDepcruiseOptions from "dependency-cruiser/config-utl/extract-depcruise-options"

const require = createRequire(import.meta.url)
const CONFIG = ".dependency-cruiser.cjs"
const { FLOORS, ROOT, floorOf } = require(`../${CONFIG}`).layers

const roomOf = (path) => {
  const rest = path.replace(/^src\//, "")
  if (!rest.includes("/") || rest.startsWith("cli/")) return ROOT
  return rest.split("/")[0]
}

const options = await extractDepcruiseOptions(`./${CONFIG}`)
const { output: result } = await cruise(["src"], options)

const arrows = new Map()
let internalImports = 0
for (const module of result.modules) {
  if (!module.source.startsWith("src/")) continue
  for (const dependency of module.dependencies) {
    if (!dependency.resolved.startsWith("src/")) continue
    internalImports++
    const from = roomOf(module.source)
    const to = roomOf(dependency.resolved)
    if (from === to) continue
    const key = `${from} -> ${to}`
    const arrow = arrows.get(key) ?? { from, to, imports: [] }
    arrow.imports.push(`${module.source} -> ${dependency.resolved}`)
    arrows.set(key, arrow)
  }
}

const isClimb = ({ from, to }) => {
  const a = floorOf(from)
  const b = floorOf(to)
  return a !== -1 && b !== -1 && b >= a
}
const climbs = [...arrows.values()].filter(isClimb)
const violations = result.summary.violations
const byRule = new Map()
for (const v of violations) byRule.set(v.rule.name, (byRule.get(v.rule.name) ?? 0) + 1)
const cycles = violations.filter((v) => v.rule.name === "no-circular")

const sum = (list) => list.reduce((n, a) => n + a.imports.length, 0)
const modules = result.modules.filter((m) => m.source.startsWith("src/"))
const rooms = new Set(modules.map((m) => roomOf(m.source)))
console.log(`modules under src/:   ${modules.length} (${internalImports} imports between them)`)
console.log(`rooms:                ${rooms.size} on ${FLOORS.length} floors`)
console.log(`arrows between rooms: ${arrows.size} (${sum([...arrows.values()])} imports)`)
console.log(`climbs:               ${climbs.length} arrows (${sum(climbs)} imports)`)
for (const c of climbs.sort((x, y) => `${x.from}${x.to}`.localeCompare(`${y.from}${y.to}`))) {
  console.log(`  ${c.from} (floor ${floorOf(c.from) + 1}) -> ${c.to} (floor ${floorOf(c.to) + 1}): ${c.imports.length}`)
  for (const i of c.imports) console.log(`      ${i}`)
}
console.log(`cycles:               ${cycles.length}`)
for (const c of cycles) console.log(`  ${[c.from, ...(c.cycle ?? []).map((step) => step.name ?? step)].join(" -> ")}`)
const perRule = [...byRule].map(([rule, n]) => `${rule} ${n}`).join(", ")
console.log(`rule violations:      ${violations.length}${perRule === "" ? "" : ` (${perRule})`}`)
if (process.argv.includes("--list")) {
  console.log("arrows:")
  for (const a of [...arrows.values()].sort((x, y) => `${x.from}${x.to}`.localeCompare(`${y.from}${y.to}`))) {
    console.log(`  ${a.from} -> ${a.to}: ${a.imports.length}${isClimb(a) ? "  (climb)" : ""}`)
  }
}
