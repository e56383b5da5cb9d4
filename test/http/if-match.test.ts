import { Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import { PreconditionFailed } from "../../src/http/errors.js"
import { expectedVersionOf, matchVersion } from "../../src/management/conventions/etag.js"

// If-Match (spec: Management common rule 3): the endpoint reads the header against the ETags
// of the resource its path names (`"<id>.<version>"`); the service holds the expected version
// against the one it read under the row lock.

describe("If-Match as the endpoint reads it", () => {
  it("is nothing when the request sent none", () => {
    expect(expectedVersionOf(undefined, "wks_1")).toBeUndefined()
  })

  it("is any version for *, alone or in a list", () => {
    expect(expectedVersionOf("*", "wks_1")).toBe("any")
    expect(expectedVersionOf(`"wks_1.3", *`, "wks_1")).toBe("any")
  })

  it("names the versions of this resource's tags, weak tags compared as strong ones", () => {
    expect(expectedVersionOf(`"wks_1.3"`, "wks_1")).toEqual([3])
    expect(expectedVersionOf(`W/"wks_1.3" , "wks_1.4"`, "wks_1")).toEqual([3, 4])
    expect(expectedVersionOf(`"env_1.theme.2"`, "env_1.theme")).toEqual([2])
  })

  it("names no version for a tag of another resource, a malformed tag or a padded version", () => {
    expect(expectedVersionOf(`"wks_2.3"`, "wks_1")).toEqual([])
    expect(expectedVersionOf(`"nonsense"`, "wks_1")).toEqual([])
    expect(expectedVersionOf(`wks_1.3`, "wks_1")).toEqual([])
    expect(expectedVersionOf(`"wks_1.03"`, "wks_1")).toEqual([])
    expect(expectedVersionOf(`"env_1.theme.2"`, "env_1")).toEqual([])
  })
})

describe("the expected version against the current one", () => {
  const run = (effect: Effect.Effect<number | undefined, PreconditionFailed>) => Effect.runSync(Effect.exit(effect))

  it("lets a request without If-Match through, expecting nothing", () => {
    expect(run(matchVersion(undefined, 7))).toEqual(Exit.succeed(undefined))
  })

  it("expects the current version for * and for a matching tag", () => {
    expect(run(matchVersion("any", 7))).toEqual(Exit.succeed(7))
    expect(run(matchVersion([6, 7], 7))).toEqual(Exit.succeed(7))
  })

  it("refuses a stale or foreign tag with 412 precondition_failed", () => {
    expect(run(matchVersion([6], 7))).toEqual(Exit.fail(new PreconditionFailed()))
    expect(run(matchVersion([], 7))).toEqual(Exit.fail(new PreconditionFailed()))
  })
})
