// Compiled by `npm run typecheck`, never run: the typed error table (src/http/problems.ts) as the
// compiler holds it. A route may fail only with an error the table knows, an OAuth error, or an
// infrastructure failure (which `route` turns into a defect); every `@ts-expect-error` below is a
// route that must not compile, and the check fails if one of them starts compiling.
import { Effect, Schema } from "effect"
import type { HttpServerResponse } from "effect/http"
import { SqlError } from "effect/sql"
import { NotFound, OAuthError, PreconditionFailed } from "../../src/http/errors.js"
import { PROBLEMS, type ProblemTag, type Refusal } from "../../src/http/problems.js"
import { json, type Route, route } from "../../src/http/route.js"
import { endpoint } from "../../src/management/conventions/endpoint.js"
import { MasterKeyMismatch } from "../../src/platform/master-key.js"

/** A feature's new error that nobody added to the table. */
class NotInTheTable extends Schema.TaggedError<NotInTheTable>()("NotInTheTable", { detail: Schema.String }) {}

const ok = Effect.succeed(json({}))
const sqlFailure = new SqlError.SqlError({
  reason: new SqlError.ConnectionError({ message: "refused", cause: undefined, operation: "connect" }),
})

export const compiles: ReadonlyArray<Route> = [
  route(
    "GET",
    "/known",
    Effect.flatMap(ok, () => Effect.fail(new NotFound({}))),
  ),
  route(
    "GET",
    "/oauth",
    Effect.flatMap(ok, () => Effect.fail(new OAuthError({ error: "invalid_grant", description: "no" }))),
  ),
  route(
    "GET",
    "/database",
    Effect.flatMap(ok, () => Effect.fail(sqlFailure)),
  ),
  route(
    "GET",
    "/several",
    Effect.gen(function* () {
      const response = yield* ok
      if (response.status === 200) return yield* new PreconditionFailed()
      return yield* Effect.fail(sqlFailure)
    }),
  ),
]

export const refused: ReadonlyArray<Route> = [
  route(
    "GET",
    "/unknown",
    // @ts-expect-error an error without an entry in PROBLEMS does not compile as a route's failure
    Effect.flatMap(ok, () => Effect.fail(new NotInTheTable({ detail: "x" }))),
  ),
  route(
    "GET",
    "/boot",
    // @ts-expect-error nor does a boot error the table rightly leaves out
    Effect.flatMap(ok, () => Effect.fail(new MasterKeyMismatch({ message: "x" }))),
  ),
  // @ts-expect-error nor an error channel that says nothing
  route("GET", "/unknown-channel", ok as Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>),
  // @ts-expect-error nor one that was erased to any
  route("GET", "/any-channel", ok as Effect.Effect<HttpServerResponse.HttpServerResponse, any>),
  endpoint({ method: "GET", path: "/v1/unknown", summary: "x" }, () =>
    // @ts-expect-error the endpoint builder holds its handlers to the same rule
    Effect.flatMap(ok, () => Effect.fail(new NotInTheTable({ detail: "x" }))),
  ),
]

export const endpointCompiles: Route = endpoint({ method: "GET", path: "/v1/known", summary: "x" }, () =>
  Effect.flatMap(ok, () => Effect.fail(new NotFound({}))),
)

// The table's keys are exactly the tags a route may fail with.
export const tag: ProblemTag = "PreconditionFailed"
// @ts-expect-error a tag the table does not know is no ProblemTag
export const unknownTag: ProblemTag = "NotInTheTable"
export const refusal: Refusal = new NotFound({})
// @ts-expect-error an error the table does not know is no Refusal
export const notARefusal: Refusal = new NotInTheTable({ detail: "x" })
export const entry = PROBLEMS.PreconditionFailed
