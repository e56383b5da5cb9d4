import { Agent as HttpAgent, type IncomingMessage, request as httpRequest } from "node:http"
import { Agent as HttpsAgent, request as httpsRequest } from "node:https"
import { Clock, Context, Effect, Layer } from "effect"
import { Config } from "../../platform/config.js"
import { checkWebhookUrl, type UrlVerdict } from "../../platform/outbound/url-policy.js"
import { guardedLookup, type Resolver, systemResolver } from "../../platform/outbound/guarded-lookup.js"
import { keptHeaders, makeSnippet, type TransportError, transportErrorOf } from "./exchange.js"
import { makeReceiverBackoff, type ReceiverBackoff } from "./receiver-backoff.js"
import { makeTargetSlots, type TargetSlots } from "./target-slots.js"
import { withCallSpan } from "../../platform/observability/span.js"
import { currentTraceparent } from "../../platform/observability/trace-context.js"
import { BoundedMap } from "../../platform/bounded-map.js"

/** Total time of one send: connect, request, response headers and the (bounded) body. */
export const DEFAULT_SEND_TIMEOUT_MS = 10_000
/** At most this much of a receiver's response body is read; the rest is discarded. */
export const MAX_RESPONSE_BYTES = 64 * 1024
/** URLs whose policy verdict a sender remembers (oldest dropped first). */
const URL_VERDICTS_CAPACITY = 1_000
/** Sends in flight to one receiver (origin) from one worker process. */
export const DEFAULT_MAX_IN_FLIGHT_PER_TARGET = 16

export interface SendInput {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

export type SendFailure = "timeout" | "blocked_address" | "connection_failed"

/** What was kept of a response: its status, a bounded set of headers and a body snippet (exchange.ts). */
export interface ResponseSeen {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
  /** More body arrived (or was still arriving) than the snippet holds. */
  readonly bodyTruncated: boolean
}

/** What one send produced: a response (any status), or no response at all. */
export type SendOutcome =
  | ({ readonly kind: "response"; readonly durationMs: number } & ResponseSeen)
  | {
      readonly kind: "failure"
      readonly reason: SendFailure
      /** The finer cause, for the delivery log (the schedule needs only `reason`). */
      readonly error: TransportError
      readonly durationMs: number
    }

export interface SenderOptions {
  readonly timeoutMs: number
  readonly maxResponseBytes: number
  /** WEBHOOK_ALLOW_PRIVATE_TARGETS: http and private targets allowed (development only). */
  readonly allowPrivateTargets: boolean
  readonly resolver?: Resolver | undefined
  /** Sends in flight per receiver origin (default DEFAULT_MAX_IN_FLIGHT_PER_TARGET). */
  readonly maxInFlightPerTarget?: number | undefined
}

type RawOutcome =
  | ({ readonly kind: "response" } & ResponseSeen)
  | { readonly kind: "failure"; readonly reason: SendFailure; readonly error: TransportError }

const failure = (error: TransportError): RawOutcome => ({
  kind: "failure",
  reason: error === "timeout" || error === "blocked_address" ? error : "connection_failed",
  error,
})

/**
 * POSTs one webhook body (spec: Events, Delivery). Redirects are never followed (node:http
 * does not follow them; a 3xx is a non-2xx answer). Every connection resolves its host
 * through the guarded lookup, so the SSRF rules hold at connect time; IP-literal hosts,
 * which skip DNS, are checked against the same rules before connecting.
 */
export class WebhookSender extends Context.Service<
  WebhookSender,
  {
    readonly send: (input: SendInput) => Effect.Effect<SendOutcome>
    readonly options: SenderOptions
    /** Per-receiver slots of the delivery worker (the synchronous test route does not use them). */
    readonly slots: TargetSlots
    /** Postponements of attempts to a busy receiver (the delivery worker's). */
    readonly backoff: ReceiverBackoff
  }
>()("webhooks/WebhookSender") {}

export const makeSender = (options: SenderOptions) => {
  const lookup = options.allowPrivateTargets ? undefined : guardedLookup(options.resolver ?? systemResolver)
  const maxInFlight = options.maxInFlightPerTarget ?? DEFAULT_MAX_IN_FLIGHT_PER_TARGET
  // Keep-alive pools per receiver (node's agents pool by host and port): a reused socket was
  // checked when it connected; a new one is checked again. One socket per slot, so a
  // receiver's pool never queues a send behind another inside the agent.
  const agents = {
    "http:": new HttpAgent({ keepAlive: true, maxSockets: maxInFlight + 4, maxFreeSockets: maxInFlight }),
    "https:": new HttpsAgent({ keepAlive: true, maxSockets: maxInFlight + 4, maxFreeSockets: maxInFlight }),
  }

  // The URL policy's verdict per URL text (a pure function of it and the options): a burst sends
  // to the same few URLs, each parsed and checked once. The URL object is only read by node:http.
  const verdicts = new BoundedMap<string, UrlVerdict>(URL_VERDICTS_CAPACITY)
  const checkedUrl = (raw: string): UrlVerdict => {
    const held = verdicts.get(raw)
    if (held !== undefined) return held
    const verdict = checkWebhookUrl(raw, { allowPrivateTargets: options.allowPrivateTargets })
    verdicts.store(raw, verdict)
    return verdict
  }

  const post = (url: URL, input: SendInput) =>
    Effect.callback<RawOutcome>((resume) => {
      let settled = false
      let response: IncomingMessage | undefined
      const snippet = makeSnippet()
      const finish = (outcome: RawOutcome) => {
        if (settled) return
        settled = true
        clearTimeout(deadline)
        resume(Effect.succeed(outcome))
      }
      // What was kept of the response; `cutShort` when its body did not arrive whole.
      const answered = (res: IncomingMessage, cutShort: boolean): RawOutcome => {
        const { body, truncated } = snippet.result(cutShort)
        return {
          kind: "response",
          status: res.statusCode ?? 0,
          headers: keptHeaders(res.headers),
          body,
          bodyTruncated: truncated,
        }
      }
      const body = Buffer.from(input.body, "utf8")
      const request = (url.protocol === "https:" ? httpsRequest : httpRequest)(
        url,
        {
          method: "POST",
          agent: agents[url.protocol as "http:" | "https:"],
          headers: { ...input.headers, "content-length": String(body.length) },
          ...(lookup ? { lookup } : {}),
        },
        (res) => {
          response = res
          let received = 0
          res.on("data", (chunk: Buffer) => {
            received += chunk.length
            snippet.push(chunk)
            // Bounded: stop reading (and drop the connection) past the limit.
            if (received > options.maxResponseBytes) {
              res.destroy()
              finish(answered(res, true))
            }
          })
          res.on("end", () => finish(answered(res, false)))
          res.on("error", () => finish(answered(res, true)))
          res.on("close", () => finish(answered(res, !res.complete)))
        },
      )
      // Bounded total time: a receiver that never answers is a time-out; one that answered
      // but trickles its body keeps its status.
      const deadline = setTimeout(() => {
        if (response) {
          response.destroy()
          finish(answered(response, true))
        } else {
          request.destroy()
          finish(failure("timeout"))
        }
      }, options.timeoutMs)
      request.on("error", (error: NodeJS.ErrnoException) => {
        if (response) return finish(answered(response, true))
        finish(failure(transportErrorOf(error)))
      })
      request.end(body)
      return Effect.sync(() => {
        clearTimeout(deadline)
        request.destroy()
      })
    })

  const send = Effect.fnUntraced(
    function* (input: SendInput) {
      const started = yield* Clock.currentTimeNanos
      const verdict = checkedUrl(input.url)
      // The receiver sees the trace of the delivery (W3C Trace Context), when spans are recorded.
      const traceparent = yield* currentTraceparent
      const raw: RawOutcome = verdict.ok
        ? yield* post(
            verdict.url,
            traceparent === undefined ? input : { ...input, headers: { ...input.headers, traceparent } },
          )
        : failure("blocked_address")
      const durationMs = Math.max(0, Math.round(Number((yield* Clock.currentTimeNanos) - started) / 1e6))
      return { ...raw, durationMs } as SendOutcome
    },
    withCallSpan("webhooks.send", { kind: "client" }),
  )

  const close = () => {
    agents["http:"].destroy()
    agents["https:"].destroy()
  }
  return {
    sender: WebhookSender.of({ send, options, slots: makeTargetSlots(maxInFlight), backoff: makeReceiverBackoff() }),
    close,
  }
}

/** A sender whose keep-alive sockets are closed with its scope. */
export const scopedSender = (options: SenderOptions) =>
  Effect.acquireRelease(
    Effect.sync(() => makeSender(options)),
    ({ close }) => Effect.sync(close),
  ).pipe(Effect.map(({ sender }) => sender))

export const WebhookSenderLive = Layer.effect(
  WebhookSender,
  Effect.gen(function* () {
    const config = yield* Config
    return yield* scopedSender({
      timeoutMs: DEFAULT_SEND_TIMEOUT_MS,
      maxResponseBytes: MAX_RESPONSE_BYTES,
      allowPrivateTargets: config.webhookAllowPrivateTargets,
      maxInFlightPerTarget: config.webhookMaxInFlightPerTarget,
    })
  }),
)
