import { type ClientRequest, request as httpRequest, type IncomingMessage } from "node:http"
import { type Readable, Transform } from "node:stream"
import { request as httpsRequest } from "node:https"
import { Effect } from "effect"
import {
  BLOCKED_ADDRESS_CODE,
  guardedLookup,
  type Resolver,
  systemResolver,
} from "../../platform/outbound/guarded-lookup.js"
import { checkWebhookUrl } from "../../platform/outbound/url-policy.js"
import { withCallSpan } from "../../platform/observability/span.js"

/**
 * Fetching an import's `source_url` (spec: Import / export jobs, "the fetch ... runs inside
 * the request"). The same SSRF guard as webhook delivery (src/webhooks): the URL rules of
 * `checkWebhookUrl` (HTTPS, no userinfo or fragment, no localhost, no blocked IP literal)
 * and, at connect time, a validating `lookup` that refuses a name resolving to any blocked
 * address (no DNS-rebinding window). Redirects are not followed. Size and total time are
 * bounded. WEBHOOK_ALLOW_PRIVATE_TARGETS (development and tests, refused in production)
 * admits http and private targets, exactly as for webhooks.
 */

/** At most this much of a JSON source is read (10 MiB, parsed whole); a CSV source is streamed (import-service.ts MAX_CSV_SOURCE_BYTES). */
export const MAX_SOURCE_BYTES = 10 * 1024 * 1024
/** Total time of a fetch: connect, headers and body (wall-clock: a network bound, not a business rule). */
export const SOURCE_TIMEOUT_MS = 30_000

export interface FetchOptions {
  readonly allowPrivateTargets: boolean
  readonly maxBytes: number
  readonly timeoutMs: number
  readonly resolver?: Resolver | undefined
}

export type FetchFailureCode =
  | "source_blocked"
  | "source_unreachable"
  | "source_timeout"
  | "source_http_error"
  | "source_too_large"

export type FetchOutcome =
  | { readonly ok: true; readonly body: Buffer }
  | { readonly ok: false; readonly code: FetchFailureCode; readonly message: string }

const failure = (code: FetchFailureCode, message: string) => ({ ok: false as const, code, message })

/** A source that failed while its body was read; the stream is destroyed with it. */
export class SourceFailure extends Error {
  constructor(
    readonly code: FetchFailureCode | "invalid_source" | "too_many_rows",
    message: string,
  ) {
    super(message)
  }
}

export type OpenOutcome =
  | { readonly ok: true; readonly body: Readable }
  | { readonly ok: false; readonly code: FetchFailureCode; readonly message: string }

export interface OpenOptions {
  readonly allowPrivateTargets: boolean
  /** Bytes of the body; beyond it the body stream fails with `source_too_large`. */
  readonly maxBytes: number
  /** Until the status line and headers arrive. */
  readonly timeoutMs: number
  /** The longest silence while the body is read (the reader's own pace can be slow: a bound on the source, not on the import). */
  readonly idleTimeoutMs: number
  readonly resolver?: Resolver | undefined
}

/**
 * Opens the source and answers its body as a byte stream (backpressure reaches the source
 * over TCP: a reader that is busy inserting a batch holds the download). The stream fails
 * with a `SourceFailure` when the source sends too much, falls silent or drops the connection.
 * Closing the body (destroy) closes the connection.
 */
export const openSource = (rawUrl: string, options: OpenOptions) =>
  Effect.callback<OpenOutcome>((resume) => {
    const verdict = checkWebhookUrl(rawUrl, { allowPrivateTargets: options.allowPrivateTargets })
    if (!verdict.ok) {
      resume(Effect.succeed(failure("source_blocked", `source_url is not allowed: ${verdict.detail}`)))
      return
    }
    const url = verdict.url
    let settled = false
    const finish = (outcome: OpenOutcome) => {
      if (settled) return
      settled = true
      clearTimeout(deadline)
      if (!outcome.ok) request.destroy()
      resume(Effect.succeed(outcome))
    }
    const lookup = options.allowPrivateTargets ? undefined : guardedLookup(options.resolver ?? systemResolver)
    const request = (url.protocol === "https:" ? httpsRequest : httpRequest)(
      url,
      {
        method: "GET",
        headers: { accept: "application/json, text/csv, */*;q=0.1", "user-agent": "authservice-user-import/1" },
        agent: false,
        ...(lookup ? { lookup } : {}),
      },
      (res) => {
        const status = res.statusCode ?? 0
        // Only a 2xx is the file; a redirect is an answer like any other (never followed).
        if (status < 200 || status > 299)
          return finish(failure("source_http_error", `The source answered HTTP ${status}`))
        const declared = Number(res.headers["content-length"] ?? "0")
        if (declared > options.maxBytes)
          return finish(failure("source_too_large", `The source is larger than ${options.maxBytes} bytes`))
        finish({ ok: true, body: boundedBody(request, res, options) })
      },
    )
    const deadline = setTimeout(
      () => finish(failure("source_timeout", `The source did not answer within ${options.timeoutMs / 1000} s`)),
      options.timeoutMs,
    )
    request.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code === BLOCKED_ADDRESS_CODE)
        return finish(failure("source_blocked", "The source host resolves to a private, loopback or reserved address"))
      finish(failure("source_unreachable", `The source could not be reached (${error.code ?? "connection failed"})`))
    })
    request.end()
    return Effect.sync(() => {
      clearTimeout(deadline)
      if (!settled) request.destroy()
    })
  })

/** The response body behind a byte counter, an idle timer and an end-of-file check. */
const boundedBody = (request: ClientRequest, res: IncomingMessage, options: OpenOptions): Readable => {
  let received = 0
  let ended = false
  const out = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      received += chunk.length
      if (received > options.maxBytes)
        return callback(new SourceFailure("source_too_large", `The source is larger than ${options.maxBytes} bytes`))
      callback(null, chunk)
    },
  })
  const fail = (error: SourceFailure) => {
    if (!out.destroyed) out.destroy(error)
    request.destroy()
  }
  res.setTimeout(options.idleTimeoutMs, () =>
    fail(new SourceFailure("source_timeout", `The source sent nothing for ${options.idleTimeoutMs / 1000} s`)),
  )
  res.on("end", () => {
    ended = true
  })
  res.on("error", () =>
    fail(new SourceFailure("source_unreachable", "The connection to the source failed while reading it")),
  )
  res.on("close", () => {
    if (!ended)
      fail(new SourceFailure("source_unreachable", "The source closed the connection before the end of the file"))
  })
  // Closing the reader early (the request only reads the head) closes the connection.
  out.on("close", () => {
    if (!ended) request.destroy()
  })
  res.pipe(out)
  return out
}

/**
 * The whole source in memory, at most `maxBytes` and `timeoutMs` in total (JSON sources and
 * CSV sources small enough to import inside the request).
 */
export const fetchSource = Effect.fnUntraced(function* (rawUrl: string, options: FetchOptions) {
  // A transport deadline, measured on the monotonic clock like the socket timers it feeds (real
  // time: a test's TestClock must not expire a network read), not a decision of the service.
  const started = performance.now()
  const opened = yield* openSource(rawUrl, { ...options, idleTimeoutMs: options.timeoutMs })
  if (!opened.ok) return opened
  // The body stream enforces maxBytes itself: reading "one byte more than it" reads it all.
  const read = yield* readHead(
    opened.body,
    options.maxBytes + 1,
    Math.max(1, options.timeoutMs - (performance.now() - started)),
    options.timeoutMs,
  )
  return read.ok ? { ok: true as const, body: read.head } : read
}, withCallSpan("userImport.fetchSource"))

export type HeadOutcome =
  | { readonly ok: true; readonly complete: boolean; readonly head: Buffer }
  | { readonly ok: false; readonly code: FetchFailureCode; readonly message: string }

/**
 * Reads at most `maxBytes` of a body within `timeoutMs`: the whole file when it is that small
 * (`complete`), else its head, and the connection is closed (the worker fetches it again).
 */
export const readHead = (body: Readable, maxBytes: number, timeoutMs: number, reportedTimeoutMs = timeoutMs) =>
  Effect.callback<HeadOutcome>((resume) => {
    const chunks: Array<Buffer> = []
    let received = 0
    let settled = false
    const finish = (outcome: HeadOutcome) => {
      if (settled) return
      settled = true
      clearTimeout(deadline)
      if (!outcome.ok || !outcome.complete) body.destroy()
      resume(Effect.succeed(outcome))
    }
    const deadline = setTimeout(
      () =>
        finish(failure("source_timeout", `The source did not deliver the file within ${reportedTimeoutMs / 1000} s`)),
      timeoutMs,
    )
    body.on("data", (chunk: Buffer) => {
      chunks.push(chunk)
      received += chunk.length
      if (received > maxBytes) finish({ ok: true, complete: false, head: Buffer.concat(chunks) })
    })
    body.on("end", () => finish({ ok: true, complete: true, head: Buffer.concat(chunks) }))
    body.on("error", (error) =>
      finish(
        error instanceof SourceFailure && error.code !== "invalid_source" && error.code !== "too_many_rows"
          ? failure(error.code, error.message)
          : failure("source_unreachable", "The connection to the source failed while reading it"),
      ),
    )
    return Effect.sync(() => {
      clearTimeout(deadline)
      body.destroy()
    })
  })
