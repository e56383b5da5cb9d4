import { createHash } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"
import { Clock, Context, Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { onEnvironmentChanged } from "../platform/environment-changes.js"
import { CurrentEnvironment } from "../tenancy/current-environment.js"
import { BoundedMap } from "../platform/bounded-map.js"

/**
 * The issuer's public documents (JWKS, discovery) are the same bytes for every caller, so
 * after the full Effect path answered one (Environment looked up, suspended or deleted
 * decided, keys read), this replica remembers the answer's bytes for a moment and serves
 * the next requests for it straight from the `node:http` listener, with no fiber, router or
 * per-request allocation beyond the response (docs/decisions/performance.md: the Effect HTTP core costs most of
 * the time of these answers). Both paths send the same headers, ETag included, and answer
 * `If-None-Match` with 304 (RFC 9110 13.1.2, 15.4.5).
 *
 * Coherence: an entry lives `TTL_MS` at most; a change of the Environment or of its keys on
 * this replica drops its entries at once (src/platform/environment-changes.ts). Other replicas already
 * see such changes through their Environment (5 s) and key (10 s) caches; this memory adds
 * at most `TTL_MS` to those bounds (decisions, "Performance").
 */
export const TTL_MS = 1_000

export interface StaticAnswer {
  /** The route within the issuer (`/oauth2/jwks`, ...), for logs and metrics. */
  readonly path: string
  readonly body: Buffer
  readonly etag: string
  /** Every header of the 200 but x-request-id (added per request). */
  readonly headers: Readonly<Record<string, string>>
  readonly expiresAt: number
}

export interface StaticAnswersApi {
  /** Remembers (or refreshes) the answer of `path` of an Environment; returns it with its ETag. */
  readonly remember: (
    environmentId: string,
    path: string,
    body: string,
    headers: Readonly<Record<string, string>>,
    nowMs: number,
  ) => StaticAnswer
  /** The live answer for the request target `/e/{id}{path}`, if remembered. */
  readonly lookup: (target: string, nowMs: number) => StaticAnswer | undefined
  readonly size: () => number
  readonly close: () => void
}

export class StaticAnswers extends Context.Service<StaticAnswers, StaticAnswersApi>()("http/StaticAnswers") {}

/** A strong validator: the same bytes always give the same tag, on every replica. */
const etagOf = (body: Buffer) => `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`

/** The paths this memory may serve (GET only; the routes list them with their CORS). */
export const STATIC_PATHS = new Set(["/oauth2/jwks", "/.well-known/openid-configuration"])
/** A bound on distinct entries: Environments x paths; unknown ids are never remembered (only 200s are). */
const CAPACITY = 20_000

export const makeStaticAnswers = (): StaticAnswersApi => {
  const entries = new BoundedMap<string, StaticAnswer>(CAPACITY)
  const stopListening = onEnvironmentChanged((environmentId) => {
    for (const path of STATIC_PATHS) entries.delete(`/e/${environmentId}${path}`)
  })
  return {
    remember: (environmentId, path, body, headers, nowMs) => {
      const key = `/e/${environmentId}${path}`
      const previous = entries.get(key)
      const bytes = Buffer.from(body)
      // The same bytes keep their ETag (and the headers they were first answered with).
      const kept = previous?.body.equals(bytes) ? previous : undefined
      const answer: StaticAnswer = {
        path,
        body: kept?.body ?? bytes,
        etag: kept?.etag ?? etagOf(bytes),
        headers: kept?.headers ?? headers,
        expiresAt: nowMs + TTL_MS,
      }
      entries.store(key, answer)
      return answer
    },
    lookup: (target, nowMs) => {
      const answer = entries.get(target)
      if (answer === undefined) return undefined
      if (answer.expiresAt <= nowMs) {
        entries.delete(target)
        return undefined
      }
      return answer
    },
    size: () => entries.size,
    close: stopListening,
  }
}

/** RFC 9110 13.1.2: weak comparison; `*` matches any current representation. */
export const matchesIfNoneMatch = (header: string | undefined, etag: string) => {
  if (header === undefined) return false
  const value = header.trim()
  if (value === "*") return true
  return value.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag)
}

/**
 * Writes a remembered answer (200, or 304 when If-None-Match matches; HEAD without the body).
 * The caller has checked method, host and target.
 */
export const writeStaticAnswer = (
  request: IncomingMessage,
  response: ServerResponse,
  answer: StaticAnswer,
  requestId: string,
) => {
  const notModified = matchesIfNoneMatch(request.headers["if-none-match"], answer.etag)
  const headers: Record<string, string | number> = { ...answer.headers, etag: answer.etag, "x-request-id": requestId }
  if (notModified) {
    delete headers["content-type"]
    response.writeHead(304, headers)
    response.end()
    return 304
  }
  headers["content-length"] = answer.body.length
  response.writeHead(200, headers)
  if (request.method === "HEAD") response.end()
  else response.end(answer.body)
  return 200
}

/** The Effect path's answer from the same memory: identical headers and ETag, 304 on a match. */
export const staticResponse = (
  ifNoneMatch: string | undefined,
  answer: StaticAnswer,
): HttpServerResponse.HttpServerResponse => {
  const { "content-type": contentType, ...rest } = answer.headers
  if (matchesIfNoneMatch(ifNoneMatch, answer.etag)) {
    return HttpServerResponse.empty({ status: 304, headers: { ...rest, etag: answer.etag } })
  }
  return HttpServerResponse.uint8Array(answer.body, {
    contentType: contentType ?? "application/json",
    headers: { ...rest, etag: answer.etag },
  })
}

/**
 * Answers a public document through the memory: remembers `body` for the request's
 * Environment and path, then answers it (as the listener will for the next requests).
 */
export const answerStatic = Effect.fnUntraced(function* (
  path: string,
  body: string,
  headers: Readonly<Record<string, string>>,
) {
  const env = yield* CurrentEnvironment
  const request = yield* HttpServerRequest.HttpServerRequest
  const answers = yield* StaticAnswers
  const nowMs = yield* Clock.currentTimeMillis
  return staticResponse(request.headers["if-none-match"], answers.remember(env.record.id, path, body, headers, nowMs))
})
