import { Effect, Schema } from "effect"
import { HttpServerRequest, type HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import {
  type InvalidRequest,
  InvalidRequestBody,
  type PayloadTooLarge,
  PreconditionRequired,
} from "../../http/errors.js"
import type { Refusal } from "../../http/problems.js"
import {
  bodyText,
  decodeJsonBody,
  decodeParams,
  decodeQuery,
  type InfrastructureFailure,
  type Method,
  refuseBodyFields,
  type Route,
  route,
  type RouteDoc,
} from "../../http/route.js"
import { CurrentCaller } from "../auth/caller.js"
import { type CallerRequirements, withCaller } from "../auth/service.js"
import { type ExpectedVersion, expectedVersionOf } from "./etag.js"
import { withIdempotency } from "./idempotency.js"

type Decodable = Schema.Top & { readonly DecodingServices: never }
type Decoded<S> = S extends Decodable ? S["Type"] : undefined

/**
 * A Management route, declared once: the declaration is both what the route does (who may call
 * it, what it decodes, which headers it honours) and its OpenAPI entry (src/openapi/document.ts).
 */
export interface Endpoint<
  P extends Decodable | undefined,
  Q extends Decodable | undefined,
  B extends Decodable | undefined,
> {
  readonly method: Method
  readonly path: `/${string}`
  readonly summary: string
  readonly tags?: ReadonlyArray<string>
  /** The scope the caller needs (401 / 403 insufficient_scope otherwise); none: any authenticated caller. */
  readonly scope?: string
  readonly caller?: CallerRequirements
  /**
   * A route for no Management caller (no API key, no Dashboard session): what admits a request,
   * first, before anything is decoded (a shared secret; an intake switched off answers 404).
   * `Effect.void` when the handler proves the caller itself (a signature over the raw body).
   * Such a route has no scope and no Idempotency-Key (a key belongs to a Management caller).
   */
  readonly admit?: Effect.Effect<unknown, Refusal | InfrastructureFailure, unknown>
  readonly params?: P
  readonly query?: Q
  readonly body?: B
  /** What an empty body stands for; without it an empty body is not JSON (400 invalid_request_body). */
  readonly emptyBody?: unknown
  /**
   * The body is JSON whatever its media type (Amazon SNS posts it as text/plain); one that does
   * not decode as `body` is 400 invalid_request_body with this detail.
   */
  readonly bodyAsText?: { readonly invalid: string }
  /** Fields the caller may not send, each with its reason: 400 invalid_request before the shape is decoded. */
  readonly readOnly?: Readonly<Record<string, string>>
  /** A further refusal of the raw body before its shape is decoded (a value no PATCH may set). */
  readonly refuseBody?: Effect.Effect<
    void,
    InvalidRequest | InvalidRequestBody | PayloadTooLarge,
    HttpServerRequest.HttpServerRequest
  >
  readonly response?: Schema.Top
  /** The success status (200 unless said). */
  readonly status?: number
  /**
   * `Idempotency-Key` (spec: Management common rule 2); the handler runs in one transaction.
   * `"per-platform-user"`: keys belong to the Dashboard user whatever Workspace is chosen
   * (creating a Workspace, which has none yet). `"handler-part"`: the handler passes the part
   * that is idempotent through `idempotently`, and what it did before is committed already (a
   * payment provider's customer, which must outlive a failed session).
   */
  readonly idempotent?: true | "per-platform-user" | "handler-part"
  /** A write without Idempotency-Key support (spec: settings, theme) still runs as one transaction. */
  readonly transaction?: true
  /**
   * `If-Match` (spec: Management common rule 3), compared with the ETag of the resource that
   * `resource` names; `required` answers 428 precondition_required when it is missing.
   */
  readonly ifMatch?: {
    readonly resource: (params: Decoded<P>) => string
    readonly required?: { readonly detail: string }
  }
}

/** What the handler receives: the decoded request and the version `If-Match` expects. */
export interface EndpointInput<P, Q, B> {
  readonly params: Decoded<P>
  readonly query: Decoded<Q>
  readonly body: Decoded<B>
  /** `undefined` unless the endpoint declares `ifMatch` and the request sent one. */
  readonly expectedVersion: ExpectedVersion
  /** Runs `f` once the handler's transaction is over (a replica drops its cached copy of what changed). */
  readonly afterCommit: (f: () => void) => void
  /** `withIdempotency` when the declaration says `idempotent: "handler-part"`; else the write as it is. */
  readonly idempotently: typeof withIdempotency
}

// biome-ignore lint/suspicious/noExplicitAny: the document reads only the declaration, whatever its schemas are
const docOf = (declaration: Endpoint<any, any, any>): RouteDoc => {
  const { summary, tags, scope, params, query, body, response, status, idempotent, ifMatch } = declaration
  return {
    summary,
    ...(tags ? { tags } : {}),
    ...(scope !== undefined ? { scope } : {}),
    ...(params ? { params } : {}),
    ...(query ? { query } : {}),
    ...(body ? { body } : {}),
    ...(response ? { response } : {}),
    ...(status !== undefined ? { status } : {}),
    ...(idempotent ? { idempotent: true } : {}),
    ...(ifMatch ? { ifMatch: ifMatch.required ? "required" : "optional" } : {}),
  }
}

/**
 * Builds a Management route from its declaration. In order: the caller (authentication, scope,
 * the Management budget), or what `admit`s a route for no Management caller; then, inside the
 * idempotency record's transaction (or a plain one), path parameters, query, refused body
 * fields, the body, `If-Match` and the handler; then what the handler asked to run after the
 * commit. A reused Idempotency-Key is judged before the
 * request's shape (spec: same key with a different body is 409, whatever that body is).
 */
export const endpoint = <
  E extends Refusal | InfrastructureFailure,
  R,
  P extends Decodable | undefined = undefined,
  Q extends Decodable | undefined = undefined,
  B extends Decodable | undefined = undefined,
>(
  declaration: Endpoint<P, Q, B>,
  handler: (input: EndpointInput<P, Q, B>) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
): Route => {
  const {
    params: paramsSchema,
    query: querySchema,
    body: bodySchema,
    readOnly,
    refuseBody,
    ifMatch,
    idempotent,
    bodyAsText,
    admit,
  } = declaration
  const bodyOptions = "emptyBody" in declaration ? { emptyAs: declaration.emptyBody } : {}
  const decodeBody = (schema: Decodable) =>
    bodyAsText
      ? Effect.flatMap(bodyText, (text) =>
          Schema.decodeUnknownEffect(Schema.fromJsonString(schema))(text).pipe(
            Effect.mapError(() => new InvalidRequestBody({ detail: bodyAsText.invalid })),
          ),
        )
      : decodeJsonBody(schema, bodyOptions)
  // The builder wraps the whole handler unless the handler marks its idempotent part itself.
  const idempotently: typeof withIdempotency = idempotent === "handler-part" ? withIdempotency : (write) => write
  const decodedThenHandled = Effect.fnUntraced(function* (committed: Array<() => void>) {
    const params = (paramsSchema ? yield* decodeParams(paramsSchema) : undefined) as Decoded<P>
    const query = (querySchema ? yield* decodeQuery(querySchema) : undefined) as Decoded<Q>
    if (readOnly) yield* refuseBodyFields(readOnly)
    if (refuseBody) yield* refuseBody
    const body = (bodySchema ? yield* decodeBody(bodySchema) : undefined) as Decoded<B>
    let expectedVersion: ExpectedVersion
    if (ifMatch) {
      const header = (yield* HttpServerRequest.HttpServerRequest).headers["if-match"]
      if (header === undefined && ifMatch.required)
        return yield* new PreconditionRequired({ detail: ifMatch.required.detail })
      expectedVersion = expectedVersionOf(header, ifMatch.resource(params))
    }
    return yield* handler({
      params,
      query,
      body,
      expectedVersion,
      afterCommit: (f) => committed.push(f),
      idempotently,
    })
  })
  const transactional = (
    write: Effect.Effect<HttpServerResponse.HttpServerResponse, Refusal | InfrastructureFailure, unknown>,
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, Refusal | InfrastructureFailure, unknown> =>
    idempotent === "handler-part"
      ? write
      : idempotent === "per-platform-user"
        ? perPlatformUser(write)
        : idempotent
          ? withIdempotency(write)
          : declaration.transaction
            ? Effect.flatMap(SqlClient.SqlClient, (sql) => sql.withTransaction(write))
            : write
  // Each request its own list of what runs after its commit.
  const run = Effect.suspend(() => {
    const committed: Array<() => void> = []
    return Effect.ensuring(
      transactional(decodedThenHandled(committed)),
      Effect.sync(() => {
        for (const f of committed) f()
      }),
    )
  })
  const handled: Effect.Effect<HttpServerResponse.HttpServerResponse, Refusal | InfrastructureFailure, unknown> = admit
    ? Effect.andThen(admit, run)
    : withCaller(declaration.scope, run, declaration.caller)
  return route(declaration.method, declaration.path, handled, docOf(declaration))
}

/**
 * Idempotency keys of the Dashboard user rather than of a Workspace: the record's namespace is
 * the user, while the handler still runs as the caller it is.
 */
const perPlatformUser = <E, R>(write: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  Effect.flatMap(CurrentCaller, (caller) =>
    Effect.provideService(withIdempotency(Effect.provideService(write, CurrentCaller, caller)), CurrentCaller, {
      ...caller,
      workspaceId: `platform_user:${caller.platformUserId}`,
    }),
  )
