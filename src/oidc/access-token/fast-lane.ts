import type { IncomingMessage, ServerResponse } from "node:http"
import type { Clock } from "effect"
import { Headers, HttpTraceContext } from "effect/http"
import { Option } from "effect"
import type { RememberedAnswer } from "./live-cache.js"
import { answerableFromMemory, introspectionAnswerKey, userinfoAnswerKey } from "./remembered-answers.js"
import type { AppConfig } from "../../platform/config.js"
import type { AppMetrics } from "../../platform/observability/metrics.js"
import { newRequestId } from "../../platform/request-id.js"
import { clientIp } from "../../platform/trust-proxy.js"
import type { IntrospectionRequest } from "../introspect/from-memory.js"
import type { RecordListenerSpan } from "../../http/listener-spans.js"
import { logRequest } from "../../http/log.js"
import { type StaticAnswersApi, writeStaticAnswer } from "../../http/static-answers.js"

/**
 * The listener's answers from memory (docs/decisions/performance.md: the Effect HTTP core costs most of the time
 * of the hottest answers). Before the Effect application is told of a request, the
 * `node:http` listener answers it here when this replica holds an answer that is still true
 * for exactly that request:
 * - the issuer's public documents (JWKS, discovery), from src/http/static-answers.ts;
 * - UserInfo and introspection 200s, remembered by the Effect path with every input of the
 *   request in their key and replayed while the state they were built from is unchanged
 *   (src/oidc/access-token/remembered-answers.ts, src/oidc/access-token/live-cache.ts);
 * - UserInfo and introspection 200s for tokens not seen before, computed with the application's
 *   own checks when everything they need is in memory (src/oidc/userinfo/from-memory.ts,
 *   src/oidc/introspect/from-memory.ts; introspection's count against its limit included).
 * Everything else, every first request and every refusal, goes through the application
 * unchanged. A memory answer gets its own request id, its request metrics, its log line and,
 * while traces are exported, its server span (src/http/listener-spans.ts), like every other answer.
 */

/** A request the lane may answer from memory: method, canonical host, target and headers. */
const STATIC_TARGET = /^\/e\/[^/?]+\/(?:oauth2\/jwks|\.well-known\/openid-configuration)$/
/** UserInfo reads no query parameter, so a query (a cache-buster) changes nothing of its answer. */
const USERINFO_TARGET = /^\/e\/([^/?]+)\/oauth2\/userinfo(?:\?[^#]*)?$/
const INTROSPECT_TARGET = /^\/e\/([^/?]+)\/oauth2\/introspect$/
/** Introspection bodies are a token and a hint: a larger body is left to the application. */
const MAX_INTROSPECTION_BODY = 8 * 1024

export interface FastLaneDependencies {
  readonly config: AppConfig
  readonly clock: Clock.Clock
  readonly metrics: AppMetrics
  readonly staticAnswers: StaticAnswersApi
  /** Remembered UserInfo / introspection answers (absent: only the public documents). */
  readonly answer?: (key: string) => RememberedAnswer | undefined
  /**
   * UserInfo's 200 computed from memory for a token not answered before (src/oidc/userinfo/from-memory.ts),
   * or undefined: the application answers.
   */
  readonly computeUserinfo?: (
    environmentId: string,
    target: string,
    authorization: string,
  ) => RememberedAnswer | undefined
  /**
   * Introspection's active 200 computed from memory (src/oidc/introspect/from-memory.ts): undefined
   * when it cannot be (nothing was counted), else a promise of the answer, or of undefined when
   * the application must answer after all.
   */
  readonly computeIntrospection?: (request: IntrospectionRequest) => Promise<RememberedAnswer | undefined> | undefined
  /** Records each answer's server span while traces are exported (src/http/listener-spans.ts). */
  readonly recordSpan?: RecordListenerSpan | undefined
  /** Hands a request to the Effect application (after the lane read its body, put back). */
  readonly handOff: (request: IncomingMessage, response: ServerResponse) => void
}

/** Returns whether the lane took the request (answered it, or will hand it off itself). */
export const makeFastLane = (d: FastLaneDependencies) => {
  const { config, clock, metrics } = d

  /** Request metrics and the log line, the same fields as src/http/app.ts. */
  const account = (request: IncomingMessage, route: string, status: number, requestId: string, started: bigint) => {
    const duration = Number(clock.currentTimeNanosUnsafe() - started) / 1e6
    const labels = {
      surface: "issuer",
      method: request.method!,
      route: `/e/{environment_id}${route}`,
      status: String(status),
    }
    metrics.httpRequests.inc(labels)
    metrics.httpDuration.observe(labels, duration / 1000)
    // Traces exported: the answer's server span, as the application's answers have one.
    const spanTraceId = d.recordSpan?.(request, { route: labels.route, status, requestId, started })
    if (config.logRequests) {
      const traceId =
        spanTraceId ??
        Option.getOrUndefined(
          Option.map(
            HttpTraceContext.fromHeaders(Headers.fromRecordUnsafe(request.headers as Record<string, string>)),
            (c) => c.traceId,
          ),
        )
      logRequest(config, {
        at: clock.currentTimeMillisUnsafe(),
        requestId,
        inbound: request.headers["x-request-id"] as string | undefined,
        traceId,
        method: request.method!,
        host: request.headers.host,
        surface: "issuer",
        route: labels.route,
        url: request.url!,
        status,
        duration,
      })
    }
  }

  const writeRemembered = (
    request: IncomingMessage,
    response: ServerResponse,
    route: string,
    answer: RememberedAnswer,
    started: bigint,
  ) => {
    const requestId = newRequestId()
    response.writeHead(answer.status, {
      ...answer.headers,
      "content-type": answer.contentType,
      "content-length": answer.body.length,
      "x-request-id": requestId,
    })
    response.end(answer.body)
    account(request, route, answer.status, requestId, started)
  }

  /** Reads a small body with a declared length, then answers it from memory or hands it off with its body put back. */
  const introspect = (
    request: IncomingMessage,
    response: ServerResponse,
    environmentId: string,
    target: string,
    started: bigint,
  ) => {
    const length = Number(request.headers["content-length"])
    const chunks: Array<Buffer> = []
    let received = 0
    const onReadable = () => {
      while (received < length) {
        const chunk = request.read() as Buffer | null
        if (chunk === null) break
        chunks.push(chunk)
        received += chunk.length
      }
      if (received < length) return
      request.off("readable", onReadable)
      request.off("end", onEnd)
      // A small body usually arrives in one chunk: no copy then.
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)
      const text = body.toString("utf8")
      const { authorization, "content-type": contentType } = request.headers
      const answerKey = introspectionAnswerKey(target, authorization, contentType, text)
      const answer = d.answer!(answerKey)
      if (answer !== undefined) {
        metrics.listenerAnswers.inc({ endpoint: "introspect", how: "replayed" })
        return writeRemembered(request, response, "/oauth2/introspect", answer, started)
      }
      const handOff = () => {
        request.unshift(body)
        d.handOff(request, response)
      }
      const computed = d.computeIntrospection?.({
        environmentId,
        answerKey,
        authorization,
        contentType,
        body: text,
        // node:http joins a repeated X-Forwarded-For into one string, as the application reads it.
        ip: clientIp(config.trustProxy, request.socket.remoteAddress, request.headers["x-forwarded-for"] as string),
      })
      if (computed === undefined) return handOff()
      const settle = (answer: RememberedAnswer | undefined) => {
        // Outside any handler: a throw here (the connection gone meanwhile) would be an
        // unhandled rejection, so the exchange is ended instead.
        try {
          if (answer === undefined) return handOff()
          metrics.listenerAnswers.inc({ endpoint: "introspect", how: "computed" })
          writeRemembered(request, response, "/oauth2/introspect", answer, started)
        } catch {
          response.destroy()
        }
      }
      computed.then(settle, () => settle(undefined))
    }
    // The body ended short of its declared length: the application answers that.
    const onEnd = () => {
      request.off("readable", onReadable)
      if (chunks.length > 0) request.unshift(Buffer.concat(chunks))
      d.handOff(request, response)
    }
    request.on("readable", onReadable)
    request.once("end", onEnd)
  }

  return (request: IncomingMessage, response: ServerResponse): boolean => {
    const { method, url: target } = request
    if (
      target === undefined ||
      !target.startsWith("/e/") ||
      request.headers.host?.toLowerCase() !== config.canonicalIssuerHost
    )
      return false
    const started = clock.currentTimeNanosUnsafe()
    if ((method === "GET" || method === "HEAD") && STATIC_TARGET.test(target)) {
      const answer = d.staticAnswers.lookup(target, Number(started / 1_000_000n))
      if (answer === undefined) return false
      const requestId = newRequestId()
      const status = writeStaticAnswer(request, response, answer, requestId)
      account(request, answer.path, status, requestId, started)
      return true
    }
    if (d.answer === undefined || !answerableFromMemory(request.headers)) return false
    // A target holding %00 is refused by the application before routing (src/http/app.ts).
    const userinfo = method === "GET" && !target.includes("%00") ? USERINFO_TARGET.exec(target) : null
    if (userinfo !== null) {
      const authorization = request.headers.authorization
      if (authorization === undefined) return false
      let answer = d.answer(userinfoAnswerKey(target, authorization))
      let how = "replayed"
      if (answer === undefined && d.computeUserinfo !== undefined) {
        answer = d.computeUserinfo(userinfo[1]!, target, authorization)
        how = "computed"
      }
      if (answer === undefined) return false
      metrics.listenerAnswers.inc({ endpoint: "userinfo", how })
      writeRemembered(request, response, "/oauth2/userinfo", answer, started)
      return true
    }
    const introspection = method === "POST" ? INTROSPECT_TARGET.exec(target) : null
    if (introspection !== null) {
      const declared = request.headers["content-length"]
      if (
        declared === undefined ||
        !/^[1-9]\d{0,4}$/.test(declared) ||
        Number(declared) > MAX_INTROSPECTION_BODY ||
        request.headers["transfer-encoding"] !== undefined ||
        request.headers.expect !== undefined
      )
        return false
      introspect(request, response, introspection[1]!, target, started)
      return true
    }
    return false
  }
}
