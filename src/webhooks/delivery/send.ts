import { Agent as HttpAgent, type IncomingMessage, request as httpRequest } from "node:http"
import { Agent as HttpsAgent, request as httpsRequest } from "node:https"
import { Clock, Context, Effect, Layer } from "effect"
import { Config } from "../../platform/config.js"
import { checkWebhookUrl } from "../../platform/outbound/url-policy.js"
import { BLOCKED_ADDRESS_CODE, guardedLookup, type Resolver, systemResolver } from "../../platform/outbound/guarded-lookup.js"
import { makeReceiverBackoff, type ReceiverBackoff } from "./receiver-backoff.js"
import { makeTargetSlots, type TargetSlots } from "./target-slots.js"
import { withCallSpan } from "../../platform/observability/span.js"

/** Total time of one send: connect, request, response headers and the (bounded) body. */
export const DEFAULT_SEND_TIMEOUT_MS = 10_000
/** At most this much of a receiver's response body is read; the rest is discarded. */
export const MAX_RESPONSE_BYTES = 64 * 1024
/** Sends in flight to one receiver (origin) from one worker process. */
export const DEFAULT_MAX_IN_FLIGHT_PER_TARGET = 16

export interface SendInput {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

export type SendFailure = "timeout" | "blocked_address" | "connection_failed"

/** What one send produced: a response (any status), or no response at all. */
export type SendOutcome =
  | { readonly kind: "response"; readonly status: number; readonly durationMs: number }
  | { readonly kind: "failure"; readonly reason: SendFailure; readonly durationMs: number }

export interface SenderOptions {
  readonly timeoutMs: number
  readonly maxResponseBytes: number
  /** WEBHOOK_ALLOW_PRIVATE_TARGETS: http and private targets allowed (development only). */
  readonly allowPrivateTargets: boolean
  readonly resolver?: Resolver | undefined
  /** Sends in flight per receiver origin (default DEFAULT_MAX_IN_FLIGHT_PER_TARGET). */
  readonly maxInFlightPerTarget?: number | undefined
}

type RawOutcome = { readonly kind: "response"; readonly status: number } | { readonly kind: "failure"; readonly reason: SendFailure }

/**
 * POSTs one webhook body (spec: Events, Delivery). Redirects are never followed (node:http
 * does not follow them; a 3xx is a non-2xx answer). Every connection resolves its host
 * through the guarded lookup, so the SSRF rules hold at connect time; IP-literal hosts,
 * which skip DNS, are checked against the same rules before connecting.
 */
export class WebhookSender extends Context.Service<WebhookSender, {
  readonly send: (input: SendInput) => Effect.Effect<SendOutcome>
  readonly options: SenderOptions
  /** Per-receiver slots of the delivery worker (the synchronous test route does not use them). */
  readonly slots: TargetSlots
  /** Postponements of attempts to a busy receiver (the delivery worker's). */
  readonly backoff: ReceiverBackoff
}>()("webhooks/WebhookSender") {}

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

  const post = (url: URL, input: SendInput) => Effect.callback<RawOutcome>((resume) => {
    let settled = false
    let response: IncomingMessage | undefined
    const finish = (outcome: RawOutcome) => {
      if (settled) return
      settled = true
      clearTimeout(deadline)
      resume(Effect.succeed(outcome))
    }
    const body = Buffer.from(input.body, "utf8")
    const request = (url.protocol === "https:" ? httpsRequest : httpRequest)(url, {
      method: "POST",
      agent: agents[url.protocol as "http:" | "https:"],
      headers: { ...input.headers, "content-length": String(body.length) },
      ...(lookup ? { lookup } : {}),
    }, (res) => {
      response = res
      const status = res.statusCode ?? 0
      let received = 0
      res.on("data", (chunk: Buffer) => {
        received += chunk.length
        // Bounded: stop reading (and drop the connection) past the limit.
        if (received > options.maxResponseBytes) {
          res.destroy()
          finish({ kind: "response", status })
        }
      })
      res.on("end", () => finish({ kind: "response", status }))
      res.on("error", () => finish({ kind: "response", status }))
      res.on("close", () => finish({ kind: "response", status }))
    })
    // Bounded total time: a receiver that never answers is a time-out; one that answered
    // but trickles its body keeps its status.
    const deadline = setTimeout(() => {
      if (response) {
        response.destroy()
        finish({ kind: "response", status: response.statusCode ?? 0 })
      } else {
        request.destroy()
        finish({ kind: "failure", reason: "timeout" })
      }
    }, options.timeoutMs)
    request.on("error", (error: NodeJS.ErrnoException) => {
      if (response) return finish({ kind: "response", status: response.statusCode ?? 0 })
      finish({ kind: "failure", reason: error.code === BLOCKED_ADDRESS_CODE ? "blocked_address" : "connection_failed" })
    })
    request.end(body)
    return Effect.sync(() => {
      clearTimeout(deadline)
      request.destroy()
    })
  })

  const send = (input: SendInput) => Effect.gen(function* () {
    const started = yield* Clock.currentTimeNanos
    const verdict = checkWebhookUrl(input.url, { allowPrivateTargets: options.allowPrivateTargets })
    const raw: RawOutcome = verdict.ok ? yield* post(verdict.url, input) : { kind: "failure", reason: "blocked_address" }
    const durationMs = Math.max(0, Math.round(Number((yield* Clock.currentTimeNanos) - started) / 1e6))
    return { ...raw, durationMs } as SendOutcome
  }).pipe(withCallSpan("webhooks.send"))

  const close = () => {
    agents["http:"].destroy()
    agents["https:"].destroy()
  }
  return { sender: WebhookSender.of({ send, options, slots: makeTargetSlots(maxInFlight), backoff: makeReceiverBackoff() }), close }
}

/** A sender whose keep-alive sockets are closed with its scope. */
export const scopedSender = (options: SenderOptions) =>
  Effect.acquireRelease(Effect.sync(() => makeSender(options)), ({ close }) => Effect.sync(close)).pipe(Effect.map(({ sender }) => sender))

export const WebhookSenderLive = Layer.effect(WebhookSender, Effect.gen(function* () {
  const config = yield* Config
  return yield* scopedSender({
    timeoutMs: DEFAULT_SEND_TIMEOUT_MS,
    maxResponseBytes: MAX_RESPONSE_BYTES,
    allowPrivateTargets: config.webhookAllowPrivateTargets,
    maxInFlightPerTarget: config.webhookMaxInFlightPerTarget,
  })
}))
