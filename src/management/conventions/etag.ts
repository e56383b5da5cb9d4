import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { PreconditionFailed } from "../../http/errors.js"

/** A resource's ETag: its row version, which every update increments. */
export const etagOf = (id: string, version: number) => `"${id}.${version}"`

export const withEtag = (response: HttpServerResponse.HttpServerResponse, id: string, version: number) =>
  HttpServerResponse.setHeader(response, "etag", etagOf(id, version))

/**
 * What a request's `If-Match` expects of one resource (spec: Management common rule 3):
 * `undefined` when it sent none, `"any"` for `*`, else the versions its entity tags name for
 * this resource (none when every tag names another resource or no version: a sure mismatch).
 * The endpoint builder reads the header (src/management/conventions/endpoint.ts); services only compare.
 */
export type ExpectedVersion = undefined | "any" | ReadonlyArray<number>

const VERSION = /^(0|[1-9][0-9]*)$/

/** Parses `If-Match` against the ETags of resource `id` (weak tags compare as strong ones). */
export const expectedVersionOf = (header: string | undefined, id: string): ExpectedVersion => {
  if (header === undefined) return undefined
  const tags = header.split(",").map((t) => t.trim().replace(/^W\//, ""))
  if (tags.includes("*")) return "any"
  const prefix = `"${id}.`
  return tags.flatMap((tag) => {
    if (!tag.startsWith(prefix) || !tag.endsWith('"')) return []
    const version = tag.slice(prefix.length, -1)
    return VERSION.test(version) ? [Number(version)] : []
  })
}

/**
 * Holds the expected version against the resource's current one, read under its row lock: a
 * mismatch is 412 precondition_failed. Returns the version the caller expects, if any, so the
 * UPDATE can also check it (`where version = $expected`) and lose no race.
 */
export const matchVersion = (
  expected: ExpectedVersion,
  currentVersion: number,
): Effect.Effect<number | undefined, PreconditionFailed> => {
  if (expected === undefined) return Effect.succeed(undefined)
  if (expected === "any" || expected.includes(currentVersion)) return Effect.succeed(currentVersion)
  return Effect.fail(new PreconditionFailed())
}
