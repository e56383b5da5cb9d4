import { Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { PreconditionFailed } from "../../http/errors.js"

/** A resource's ETag: its row version, which every update increments. */
export const etagOf = (id: string, version: number) => `"${id}.${version}"`

export const withEtag = (response: HttpServerResponse.HttpServerResponse, id: string, version: number) =>
  HttpServerResponse.setHeader(response, "etag", etagOf(id, version))

/**
 * `If-Match` on single-resource updates and deletes: a mismatch is 412 precondition_failed
 * (spec: Management common rule 3). Returns the version the caller expects, if any, so the
 * UPDATE can also check it (`where version = $expected`) and lose no race.
 */
export const checkIfMatch = (id: string, currentVersion: number) => Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const header = request.headers["if-match"]
  if (header === undefined) return undefined
  const tags = header.split(",").map((t) => t.trim().replace(/^W\//, ""))
  if (tags.includes("*") || tags.includes(etagOf(id, currentVersion))) return currentVersion
  return yield* new PreconditionFailed()
})
