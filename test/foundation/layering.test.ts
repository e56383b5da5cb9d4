import { fileURLToPath } from "node:url"
import { cruise, type ICruiseResult } from "dependency-cruiser"
import extractDepcruiseOptions from "dependency-cruiser/config-utl/extract-depcruise-options"
import { describe, expect, it } from "vitest"

// The layering of src/ (docs/architecture.md, "Floors"), held by the rules of .dependency-cruiser.cjs:
// no import cycles, platform/ and http/ import no feature, nothing imports the composition root,
// packages/hono/ (the npm package @authservice/hono) imports nothing of the server and the server
// nothing of it, and no import climbs to a higher floor except the
// climbs the rule file names. `npm run lint:layers` runs the same cruise.

const CONFIG = fileURLToPath(new URL("../../.dependency-cruiser.cjs", import.meta.url))
const FIXTURE = fileURLToPath(new URL("./layering-fixture", import.meta.url))

const cruiseSrc = async (baseDir?: string): Promise<ICruiseResult> => {
  const options = await extractDepcruiseOptions(CONFIG)
  const { output } = await cruise(
    ["src", "packages/hono/src"],
    baseDir === undefined ? options : { ...options, baseDir },
  )
  if (typeof output === "string") throw new Error("dependency-cruiser answered text, not a cruise result")
  return output
}

/** One line per broken rule: `rule: from -> to` (a cycle lists its files). */
const violations = (result: ICruiseResult) =>
  result.summary.violations
    .map(
      (v) =>
        `${v.rule.name}: ${v.from} -> ${v.cycle === undefined ? v.to : v.cycle.map((step) => step.name).join(" -> ")}`,
    )
    .sort()

describe("layering of src/", () => {
  it("breaks no rule of .dependency-cruiser.cjs", async () => {
    const result = await cruiseSrc()
    // The cruise saw the tree: every TypeScript module of src/, with its imports resolved.
    expect(result.summary.totalCruised).toBeGreaterThan(350)
    expect(violations(result)).toEqual([])
  }, 60_000)

  it("the rules catch each kind of breach (a fixture tree with one of each, and one allowed climb)", async () => {
    expect(violations(await cruiseSrc(FIXTURE))).toEqual([
      "every-room-has-a-floor: src/newroom/thing.ts -> src/platform/clock.ts",
      "hono-ships-alone: packages/hono/src/adapter.ts -> src/platform/clock.ts",
      "http-knows-no-feature: src/http/app.ts -> src/login/routes.ts",
      "no-circular: src/users/a.ts -> src/users/b.ts -> src/users/a.ts",
      "no-upward-import: src/billing/invoice.ts -> src/webhooks/subscriptions.ts",
      "no-upward-import: src/http/app.ts -> src/login/routes.ts",
      "no-upward-import: src/login/routes.ts -> src/routes.ts",
      "no-upward-import: src/platform/clock.ts -> src/webhooks/subscriptions.ts",
      "no-upward-import: src/users/profile.ts -> src/me/view.ts",
      "nothing-imports-the-root: src/login/routes.ts -> src/routes.ts",
      "platform-knows-no-feature: src/platform/clock.ts -> src/webhooks/subscriptions.ts",
      "server-without-hono-package: src/oidc/codes/uses-package.ts -> packages/hono/src/index.ts",
    ])
  }, 60_000)
})
