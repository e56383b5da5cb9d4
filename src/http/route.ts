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

const describe = (error: Schema.SchemaError) => SchemaIssue.makeFormatterDefault()(error.issue)

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

/** True when a decoding failure is a broken rule (a check: length, pattern, range), not a wrong shape. */
const brokeARule = (issue: SchemaIssue.Issue): boolean => {
  switch (issue._tag) {
    case "Filter":
      return true
    case "Pointer":
    case "Encoding":
      return brokeARule(issue.issue)
    case "Composite":
    case "AnyOf":
      return issue.issues.some(brokeARule)
    default:
      return false
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
 * Parses and decodes a JSON body (DESIGN decisions): unreadable JSON, a wrong type, a
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
    return yield* Schema.decodeUnknownEffect(schema)(value, { onExcessProperty: "error" }).pipe(
      Effect.mapError((e) => brokeARule(e.issue)
        ? new InvalidRequest({ detail: describe(e) })
        : new InvalidRequestBody({ detail: describe(e) })))
  }) as Effect.Effect<S["Type"], InvalidRequest | InvalidRequestBody | PayloadTooLarge, HttpServerRequest.HttpServerRequest>

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
