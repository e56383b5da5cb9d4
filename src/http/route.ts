import { Context, Effect, Schema, SchemaIssue } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { InvalidRequest, InvalidRequestBody, PayloadTooLarge } from "./errors.js"

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "OPTIONS"

/** What the OpenAPI document says of a route; the same schemas decode the request. */
export interface RouteDoc {
  readonly summary: string
  readonly tags?: ReadonlyArray<string>
  readonly scope?: string
  readonly params?: Schema.Top
  readonly query?: Schema.Top
  readonly body?: Schema.Top
  readonly response?: Schema.Top
  readonly status?: number
  readonly idempotent?: boolean
}

export interface Route<R = any> {
  readonly method: Method
  readonly path: `/${string}`
  readonly handler: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, R>
  readonly doc?: RouteDoc
}

export const route = <R>(
  method: Method,
  path: `/${string}`,
  handler: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, R>,
  doc?: RouteDoc,
): Route<R> => (doc === undefined ? { method, path, handler } : { method, path, handler, doc })

/** Path parameters and the parsed query string of the matched route. */
export class RouteMatch extends Context.Service<RouteMatch, {
  readonly params: Readonly<Record<string, string | undefined>>
  readonly query: Readonly<Record<string, string | ReadonlyArray<string>>>
}>()("http/RouteMatch") {}

const describeIssue = SchemaIssue.makeFormatterDefault()
const describe = (error: Schema.SchemaError) => describeIssue(error.issue)

export const decodeParams = <S extends Schema.Top & { readonly DecodingServices: never }>(schema: S) =>
  Effect.gen(function* () {
    const { params } = yield* RouteMatch
    return yield* Schema.decodeUnknownEffect(schema)(params, { onExcessProperty: "ignore" }).pipe(
      Effect.mapError((e) => new InvalidRequest({ detail: describe(e) })))
  }) as Effect.Effect<S["Type"], InvalidRequest, RouteMatch>

export const decodeQuery = <S extends Schema.Top & { readonly DecodingServices: never }>(schema: S) =>
  Effect.gen(function* () {
    const { query } = yield* RouteMatch
    return yield* Schema.decodeUnknownEffect(schema)(query, { onExcessProperty: "ignore" }).pipe(
      Effect.mapError((e) => new InvalidRequest({ detail: describe(e) })))
  }) as Effect.Effect<S["Type"], InvalidRequest, RouteMatch>

export const MAX_BODY_BYTES = 1024 * 1024

/** Reads the raw body text, refusing more than 1 MiB. */
export const bodyText = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const declared = Number(request.headers["content-length"] ?? "0")
  if (declared > MAX_BODY_BYTES) return yield* new PayloadTooLarge()
  return yield* request.text.pipe(Effect.catch((e): Effect.Effect<never, PayloadTooLarge | InvalidRequestBody> =>
    e.reason._tag === "RequestParseError" && (e.reason as { reason?: string }).reason === "BodyTooLarge"
      ? Effect.fail(new PayloadTooLarge())
      : Effect.fail(new InvalidRequestBody({ detail: "The request body could not be read" }))))
})

/**
 * A Schema check that states a JSON type rather than a rule: `Schema.Int` is a filter in
 * Effect, but the OpenAPI document (generated from the same schema) says `type: integer`,
 * so 1.5 for an integer field is a wrong type.
 */
const statesAType = (issue: SchemaIssue.Filter): boolean =>
  (issue.filter.annotations?.["representation"] as { readonly id?: unknown } | undefined)?.id === "effect/schema/isInt"

/**
 * The first problem of a failed decoding that makes the body wrongly shaped (unreadable as the
 * schema's types: a wrong type, a value outside an enum, a missing or an unknown field), with
 * its path; `undefined` when every problem is a broken rule (a check on a well-typed value:
 * length, pattern, range, format). Needs the issue of a decoding with `errors: "all"`: the
 * first error alone could be a broken rule next to a wrong type.
 */
const wrongShape = (issue: SchemaIssue.Issue, path: ReadonlyArray<PropertyKey> = []): SchemaIssue.Issue | undefined => {
  switch (issue._tag) {
    case "Filter":
      return statesAType(issue) ? new SchemaIssue.Pointer(path, issue) : undefined
    case "Pointer":
      return wrongShape(issue.issue, [...path, ...issue.path])
    case "Encoding":
      return wrongShape(issue.issue, path)
    case "Composite":
      for (const inner of issue.issues) {
        const found = wrongShape(inner, path)
        if (found !== undefined) return found
      }
      return undefined
    case "AnyOf":
      // The alternatives whose type matched report their broken checks: one of them means the
      // value is well typed; none (or wrong shapes only) means no alternative fits its type.
      return issue.issues.every((inner) => wrongShape(inner) !== undefined) ? new SchemaIssue.Pointer(path, issue) : undefined
    default:
      return new SchemaIssue.Pointer(path, issue)
  }
}

/** The first broken rule (a failed check) of a failed decoding, with its path. */
const brokenRule = (issue: SchemaIssue.Issue, path: ReadonlyArray<PropertyKey> = []): SchemaIssue.Issue | undefined => {
  switch (issue._tag) {
    case "Filter":
      return new SchemaIssue.Pointer(path, issue)
    case "Pointer":
      return brokenRule(issue.issue, [...path, ...issue.path])
    case "Encoding":
      return brokenRule(issue.issue, path)
    case "Composite":
    case "AnyOf":
      for (const inner of issue.issues) {
        const found = brokenRule(inner, path)
        if (found !== undefined) return found
      }
      return undefined
    default:
      return undefined
  }
}

const parseJson = (text: string): { readonly ok: true; readonly value: unknown } | { readonly ok: false } => {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false }
  }
}

/**
 * Parses and decodes a JSON body (docs/architecture.md, Decisions): unreadable JSON, a wrong type, a
 * missing or an unknown field is 400 `invalid_request_body`; a well-typed value that
 * breaks a rule (length, pattern, range) is 400 `invalid_request`.
 */
export const decodeJsonBody = <S extends Schema.Top & { readonly DecodingServices: never }>(schema: S, options: { readonly emptyAs?: unknown } = {}) =>
  Effect.gen(function* () {
    const text = yield* bodyText
    let value: unknown
    if (text.trim() === "" && "emptyAs" in options) value = options.emptyAs
    else {
      const parsed = parseJson(text)
      if (!parsed.ok) return yield* new InvalidRequestBody({ detail: "The request body is not valid JSON" })
      value = parsed.value
    }
    // All errors, so that a wrong type anywhere wins over a broken rule elsewhere; the detail
    // names one problem (a 1 MiB body of bad values would otherwise give a 1 MiB detail).
    const decoded = yield* Schema.decodeUnknownEffect(schema)(value, { onExcessProperty: "error", errors: "all" }).pipe(
      Effect.mapError((e) => {
        const shape = wrongShape(e.issue)
        if (shape !== undefined) return new InvalidRequestBody({ detail: describeIssue(shape) })
        return new InvalidRequest({ detail: describeIssue(brokenRule(e.issue) ?? e.issue) })
      }))
    // A well-shaped body can still carry U+0000, which Postgres text and jsonb cannot hold (the
    // insert would fail as a server error): a broken rule, whatever the field. In JSON text a NUL
    // is always escaped, so only a body containing `\u0000` is walked.
    if (text.includes("\\u0000") && holdsNul(value)) {
      return yield* new InvalidRequest({ detail: "Strings must not contain the NUL character (U+0000)" })
    }
    return decoded
  }) as Effect.Effect<S["Type"], InvalidRequest | InvalidRequestBody | PayloadTooLarge, HttpServerRequest.HttpServerRequest>

const holdsNul = (value: unknown): boolean => {
  if (typeof value === "string") return value.includes("\u0000")
  if (value === null || typeof value !== "object") return false
  if (Array.isArray(value)) return value.some(holdsNul)
  return Object.entries(value).some(([key, v]) => key.includes("\u0000") || holdsNul(v))
}

/**
 * Refuses a JSON body that names a field the caller may not set (read-only, derived or
 * immutable) with 400 `invalid_request` saying why, before the shape is decoded. An
 * unreadable body passes through: decoding then reports it as `invalid_request_body`.
 */
export const refuseBodyFields = (fields: Readonly<Record<string, string>>) => Effect.gen(function* () {
  const parsed = parseJson(yield* bodyText)
  if (!parsed.ok) return
  const value = parsed.value
  if (value === null || typeof value !== "object" || Array.isArray(value)) return
  for (const [field, reason] of Object.entries(fields)) {
    if (Object.hasOwn(value, field)) return yield* new InvalidRequest({ detail: `${field} ${reason}` })
  }
})

export const json = (body: unknown, status = 200, headers?: Record<string, string>) =>
  HttpServerResponse.jsonUnsafe(body, headers ? { status, headers } : { status })
