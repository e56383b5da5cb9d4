import { Context, Effect, Schema, SchemaIssue } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import type { SqlError } from "effect/sql"
import { InvalidRequest, InvalidRequestBody, OAuthError, PayloadTooLarge } from "./errors.js"
import { fieldErrors, jsonPointer } from "./field-errors.js"
import { isProblemTag, type Refusal } from "./problems.js"

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "OPTIONS"

/**
 * A route path (`/v1/clients/:clientId`, find-my-way's syntax) in the spec's and OpenAPI's
 * template style (`/v1/clients/{clientId}`): the one spelling of a route in the OpenAPI
 * document, metric labels, log lines and spans, beside the issuer's `/e/{environment_id}`.
 */
export const routeTemplate = (path: string): string => path.replace(/:(\w+)/g, "{$1}")

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
  /** Whether the route honours `If-Match`, and whether it requires it (428 without). */
  readonly ifMatch?: "optional" | "required"
}

/**
 * A route fails only with a `Refusal`: an error the table of src/http/problems.ts answers, or
 * an OAuth error body. A handler that can fail with anything else does not compile.
 */
// biome-ignore lint/suspicious/noExplicitAny: a route list mixes routes that need different services; the app layer provides them all
export interface Route<R = any> {
  readonly method: Method
  readonly path: `/${string}`
  readonly handler: Effect.Effect<HttpServerResponse.HttpServerResponse, Refusal, R>
  readonly doc?: RouteDoc
}

/**
 * Failures of the infrastructure under a handler: they refuse nothing the caller sent, so they
 * are no `Refusal`. `route` turns them into defects; the app still answers a database that
 * refused with 503 and Retry-After, and anything else with 500 (src/http/storage-failure.ts).
 */
export type InfrastructureFailure = SqlError.SqlError

const isRefusal = (error: unknown): error is Refusal =>
  error instanceof OAuthError ||
  (typeof error === "object" &&
    error !== null &&
    "_tag" in error &&
    typeof error._tag === "string" &&
    isProblemTag(error._tag))

/** The route's failures as the app sees them: refusals stay failures, the rest become defects. */
export const refusalsOnly = <A, E extends Refusal | InfrastructureFailure, R>(handler: Effect.Effect<A, E, R>) =>
  handler.pipe(Effect.catch((error) => (isRefusal(error) ? Effect.fail(error) : Effect.die(error)))) as Effect.Effect<
    A,
    Exclude<E, InfrastructureFailure>,
    R
  >

export const route = <E extends Refusal | InfrastructureFailure, R>(
  method: Method,
  path: `/${string}`,
  handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> &
    (0 extends 1 & E ? { readonly errorChannelIsAny: never } : unknown),
  doc?: RouteDoc,
): Route<R> => {
  const refusing: Effect.Effect<HttpServerResponse.HttpServerResponse, Refusal, R> = refusalsOnly(handler)
  return doc === undefined ? { method, path, handler: refusing } : { method, path, handler: refusing, doc }
}

/** Path parameters and the parsed query string of the matched route. */
export class RouteMatch extends Context.Service<
  RouteMatch,
  {
    readonly params: Readonly<Record<string, string | undefined>>
    readonly query: Readonly<Record<string, string | ReadonlyArray<string>>>
  }
>()("http/RouteMatch") {}

const describeIssue = SchemaIssue.makeFormatterDefault()
const describe = (error: Schema.SchemaError) => describeIssue(error.issue)

export const decodeParams = <S extends Schema.Top & { readonly DecodingServices: never }>(schema: S) =>
  Effect.gen(function* () {
    const { params } = yield* RouteMatch
    return yield* Schema.decodeUnknownEffect(schema)(params, { onExcessProperty: "ignore" }).pipe(
      Effect.mapError((e) => new InvalidRequest({ detail: describe(e) })),
    )
  }) as Effect.Effect<S["Type"], InvalidRequest, RouteMatch>

export const decodeQuery = <S extends Schema.Top & { readonly DecodingServices: never }>(schema: S) =>
  Effect.gen(function* () {
    const { query } = yield* RouteMatch
    return yield* Schema.decodeUnknownEffect(schema)(query, { onExcessProperty: "ignore" }).pipe(
      Effect.mapError((e) => new InvalidRequest({ detail: describe(e) })),
    )
  }) as Effect.Effect<S["Type"], InvalidRequest, RouteMatch>

export const MAX_BODY_BYTES = 1024 * 1024

/** Reads the raw body text, refusing more than 1 MiB. */
export const bodyText = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const declared = Number(request.headers["content-length"] ?? "0")
  if (declared > MAX_BODY_BYTES) return yield* new PayloadTooLarge()
  return yield* request.text.pipe(
    Effect.catch(
      (e): Effect.Effect<never, PayloadTooLarge | InvalidRequestBody> =>
        e.reason._tag === "RequestParseError" && (e.reason as { reason?: string }).reason === "BodyTooLarge"
          ? Effect.fail(new PayloadTooLarge())
          : Effect.fail(new InvalidRequestBody({ detail: "The request body could not be read" })),
    ),
  )
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
      return issue.issues.every((inner) => wrongShape(inner) !== undefined)
        ? new SchemaIssue.Pointer(path, issue)
        : undefined
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
export const decodeJsonBody = <S extends Schema.Top & { readonly DecodingServices: never }>(
  schema: S,
  options: { readonly emptyAs?: unknown } = {},
) =>
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
    // names one problem, `errors` lists every invalid field (bounded: a 1 MiB body of bad
    // values would otherwise give a 1 MiB answer).
    const decoded = yield* Schema.decodeUnknownEffect(schema)(value, { onExcessProperty: "error", errors: "all" }).pipe(
      Effect.mapError((e) => {
        const errors = fieldErrors(e.issue)
        const shape = wrongShape(e.issue)
        if (shape !== undefined) return new InvalidRequestBody({ detail: describeIssue(shape), errors })
        return new InvalidRequest({ detail: describeIssue(brokenRule(e.issue) ?? e.issue), errors })
      }),
    )
    // A well-shaped body can still carry U+0000 or a lone UTF-16 surrogate (`\ud800`), which
    // Postgres text and jsonb cannot hold (the insert would fail as a server error): a broken
    // rule, whatever the field. In JSON text both can only arrive escaped, so only a body
    // containing `\u` is walked.
    if (text.includes("\\u")) {
      const unstorable = findUnstorable(value)
      if (unstorable !== undefined)
        return yield* new InvalidRequest({
          detail: UNSTORABLE[unstorable.kind],
          errors: [{ pointer: jsonPointer(unstorable.path), detail: UNSTORABLE[unstorable.kind] }],
        })
    }
    return decoded
  }) as Effect.Effect<
    S["Type"],
    InvalidRequest | InvalidRequestBody | PayloadTooLarge,
    HttpServerRequest.HttpServerRequest
  >

const UNSTORABLE = {
  nul: "Strings must not contain the NUL character (U+0000)",
  surrogate: "Strings must be well-formed Unicode (no unpaired surrogate such as \\ud800)",
} as const

const unstorableString = (s: string): keyof typeof UNSTORABLE | undefined =>
  s.includes("\u0000") ? "nul" : s.isWellFormed() ? undefined : "surrogate"

/** The first string (value or member name) Postgres cannot store, and where it is. */
const findUnstorable = (
  value: unknown,
  path: ReadonlyArray<PropertyKey> = [],
): { readonly kind: keyof typeof UNSTORABLE; readonly path: ReadonlyArray<PropertyKey> } | undefined => {
  if (typeof value === "string") {
    const kind = unstorableString(value)
    return kind === undefined ? undefined : { kind, path }
  }
  if (value === null || typeof value !== "object") return undefined
  for (const [key, inner] of Array.isArray(value) ? value.entries() : Object.entries(value)) {
    const inKey = typeof key === "string" ? unstorableString(key) : undefined
    if (inKey !== undefined) return { kind: inKey, path: [...path, key] }
    const found = findUnstorable(inner, [...path, key])
    if (found !== undefined) return found
  }
  return undefined
}

/**
 * Refuses a JSON body that names a field the caller may not set (read-only, derived or
 * immutable) with 400 `invalid_request` saying why, before the shape is decoded. An
 * unreadable body passes through: decoding then reports it as `invalid_request_body`.
 */
export const refuseBodyFields = Effect.fnUntraced(function* (fields: Readonly<Record<string, string>>) {
  const parsed = parseJson(yield* bodyText)
  if (!parsed.ok) return
  const value = parsed.value
  if (value === null || typeof value !== "object" || Array.isArray(value)) return
  for (const [field, reason] of Object.entries(fields)) {
    if (Object.hasOwn(value, field))
      return yield* new InvalidRequest({
        detail: `${field} ${reason}`,
        errors: [{ pointer: jsonPointer([field]), detail: `${field} ${reason}` }],
      })
  }
})

export const json = (body: unknown, status = 200, headers?: Record<string, string>) =>
  HttpServerResponse.jsonUnsafe(body, headers ? { status, headers } : { status })
