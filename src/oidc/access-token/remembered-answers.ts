import type { IncomingHttpHeaders } from "node:http"
import { Effect, Option } from "effect"
import { HttpEffect, HttpServerRequest } from "effect/http"
import { type AnswerDependencies, LiveStateCache } from "./live-cache.js"

/**
 * UserInfo and introspection answers replayed from memory (docs/decisions/performance.md): the Effect path
 * remembers its 200 under a key naming every input the answer depends on, and the listener's
 * fast lane (./fast-lane.ts) replays it for the next request with exactly those inputs while
 * the state it was built from is unchanged (src/oidc/access-token/live-cache.ts decides that).
 * Both sides build the key here, so they cannot disagree on what an input is.
 */

/** Headers that make an answer depend on more than the key: such requests always take the full path. */
export const answerableFromMemory = (headers: IncomingHttpHeaders | Readonly<Record<string, string | undefined>>) =>
  headers["origin"] === undefined && headers["x-management-api-key"] === undefined

export const userinfoAnswerKey = (target: string, authorization: string) => `GET ${target}\n${authorization}`

export const introspectionAnswerKey = (
  target: string,
  authorization: string | undefined,
  contentType: string | undefined,
  body: string,
) => `POST ${target}\n${authorization ?? ""}\n${contentType ?? ""}\n${body}`

/**
 * Remembers this request's answer under `key` if it is a 200 and the state it was built from
 * is still the state held (the final response, after every pre-response handler but ours, so
 * the replay carries the same headers; the request id is per request).
 */
export const rememberAnswer = Effect.fnUntraced(function* (key: string, dependencies: AnswerDependencies) {
  const cache = yield* Effect.serviceOption(LiveStateCache)
  if (Option.isNone(cache)) return
  const request = yield* HttpServerRequest.HttpServerRequest
  if (!answerableFromMemory(request.headers)) return
  yield* HttpEffect.appendPreResponseHandler((_request, response) =>
    Effect.sync(() => {
      if (response.status === 200 && response.body._tag === "Uint8Array") {
        const { "x-request-id": _, ...headers } = response.headers
        cache.value.rememberAnswer(key, dependencies, {
          status: 200,
          contentType: response.body.contentType,
          headers,
          body: response.body.body,
        })
      }
      return response
    }),
  )
})
