import { Cause, Effect, Exit, Schema } from "effect"
import { SqlError } from "effect/sql"
import { describe, expect, it } from "vitest"
import { NotFound, OAuthError } from "../../src/http/errors.js"
import { refusalsOnly } from "../../src/http/route.js"
import { isStorageUnavailable } from "../../src/http/storage-failure.js"

// The boundary of a route (src/http/route.ts): refusals stay typed failures, infrastructure
// failures become defects that the app still answers 503 (a database that refused) or 500.

const refusedConnection = new SqlError.SqlError({
  reason: new SqlError.ConnectionError({ message: "connection refused", cause: undefined, operation: "connect" }),
})

const exitOf = <E>(effect: Effect.Effect<never, E>) =>
  Effect.runSync(Effect.exit(refusalsOnly(effect as Effect.Effect<never, any>)))

describe("a route's failures at its boundary", () => {
  it("keeps an error of the table as a failure", () => {
    const exit = exitOf(Effect.fail(new NotFound({ detail: "gone" })))
    expect(Exit.isFailure(exit) && Cause.hasFails(exit.cause)).toBe(true)
    expect(Exit.isFailure(exit) && Cause.squash(exit.cause)).toEqual(new NotFound({ detail: "gone" }))
  })

  it("keeps an OAuth error as a failure", () => {
    const exit = exitOf(Effect.fail(new OAuthError({ error: "invalid_grant", description: "used" })))
    expect(Exit.isFailure(exit) && Cause.hasFails(exit.cause)).toBe(true)
  })

  it("turns a database failure into a defect the app still recognises as storage unavailable (503)", () => {
    const exit = exitOf(Effect.fail(refusedConnection))
    expect(Exit.isFailure(exit) && Cause.hasFails(exit.cause)).toBe(false)
    expect(Exit.isFailure(exit) && Cause.hasDies(exit.cause)).toBe(true)
    expect(Exit.isFailure(exit) && isStorageUnavailable(Cause.squash(exit.cause))).toBe(true)
  })

  it("turns an error the table does not know into a defect (answered 500)", () => {
    class Stray extends Schema.TaggedError<Stray>()("Stray", {}) {}
    const exit = exitOf(Effect.fail(new Stray()))
    expect(Exit.isFailure(exit) && Cause.hasDies(exit.cause)).toBe(true)
    expect(Exit.isFailure(exit) && isStorageUnavailable(Cause.squash(exit.cause))).toBe(false)
  })
})
