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

/** Parses a JSON body; unreadable JSON or a wrong shape is 400 invalid_request_body. */
export const decodeJsonBody = <S extends Schema.Top & { readonly DecodingServices: never }>(schema: S, options: { readonly emptyAs?: unknown } = {}) =>
  Effect.gen(function* () {
    const text = yield* bodyText
    let value: unknown
    if (text.trim() === "" && "emptyAs" in options) value = options.emptyAs
    else {
      try {
        value = JSON.parse(text)
      } catch {
        return yield* new InvalidRequestBody({ detail: "The request body is not valid JSON" })
      }
    }
    return yield* Schema.decodeUnknownEffect(schema)(value, { onExcessProperty: "error" }).pipe(
      Effect.mapError((e) => new InvalidRequestBody({ detail: describe(e) })))
  }) as Effect.Effect<S["Type"], InvalidRequestBody | PayloadTooLarge, HttpServerRequest.HttpServerRequest>

export const json = (body: unknown, status = 200, headers?: Record<string, string>) =>
  HttpServerResponse.jsonUnsafe(body, headers ? { status, headers } : { status })
