import { request as httpRequest, type IncomingMessage } from "node:http"
import { request as httpsRequest } from "node:https"
import { Effect } from "effect"
import { BLOCKED_ADDRESS_CODE, guardedLookup, type Resolver, systemResolver } from "../../webhooks/delivery/guarded-lookup.js"
import { checkWebhookUrl } from "../../webhooks/url-policy.js"

/**
 * Fetching an import's `source_url` (spec: Import / export jobs, "the fetch ... runs inside
 * the request"). The same SSRF guard as webhook delivery (src/webhooks): the URL rules of
 * `checkWebhookUrl` (HTTPS, no userinfo or fragment, no localhost, no blocked IP literal)
 * and, at connect time, a validating `lookup` that refuses a name resolving to any blocked
 * address (no DNS-rebinding window). Redirects are not followed. Size and total time are
 * bounded. WEBHOOK_ALLOW_PRIVATE_TARGETS (development and tests, refused in production)
 * admits http and private targets, exactly as for webhooks.
 */

/** At most this much is read from a source (10 MiB). */
export const MAX_SOURCE_BYTES = 10 * 1024 * 1024
/** Total time of a fetch: connect, headers and body (wall-clock: a network bound, not a business rule). */
export const SOURCE_TIMEOUT_MS = 30_000

export interface FetchOptions {
  readonly allowPrivateTargets: boolean
  readonly maxBytes: number
  readonly timeoutMs: number
  readonly resolver?: Resolver | undefined
}

export type FetchFailureCode = "source_blocked" | "source_unreachable" | "source_timeout" | "source_http_error" | "source_too_large"

export type FetchOutcome =
  | { readonly ok: true; readonly body: Buffer }
  | { readonly ok: false; readonly code: FetchFailureCode; readonly message: string }

const failure = (code: FetchFailureCode, message: string): FetchOutcome => ({ ok: false, code, message })

export const fetchSource = (rawUrl: string, options: FetchOptions) => Effect.callback<FetchOutcome>((resume) => {
  const verdict = checkWebhookUrl(rawUrl, { allowPrivateTargets: options.allowPrivateTargets })
  if (!verdict.ok) {
    resume(Effect.succeed(failure("source_blocked", `source_url is not allowed: ${verdict.detail}`)))
    return
  }
  const url = verdict.url
  let settled = false
  let response: IncomingMessage | undefined
  const finish = (outcome: FetchOutcome) => {
    if (settled) return
    settled = true
    clearTimeout(deadline)
    response?.destroy()
    request.destroy()
    resume(Effect.succeed(outcome))
  }
  const lookup = options.allowPrivateTargets ? undefined : guardedLookup(options.resolver ?? systemResolver)
  const request = (url.protocol === "https:" ? httpsRequest : httpRequest)(url, {
    method: "GET",
    headers: { accept: "application/json, text/csv, */*;q=0.1", "user-agent": "authservice-user-import/1" },
    agent: false,
    ...(lookup ? { lookup } : {}),
  }, (res) => {
    response = res
    const status = res.statusCode ?? 0
    // Only a 2xx is the file; a redirect is an answer like any other (never followed).
    if (status < 200 || status > 299) return finish(failure("source_http_error", `The source answered HTTP ${status}`))
    const declared = Number(res.headers["content-length"] ?? "0")
    if (declared > options.maxBytes) return finish(failure("source_too_large", `The source is larger than ${options.maxBytes} bytes`))
    const chunks: Array<Buffer> = []
    let received = 0
    res.on("data", (chunk: Buffer) => {
      received += chunk.length
      if (received > options.maxBytes) return finish(failure("source_too_large", `The source is larger than ${options.maxBytes} bytes`))
      chunks.push(chunk)
    })
    res.on("end", () => finish({ ok: true, body: Buffer.concat(chunks) }))
    res.on("error", () => finish(failure("source_unreachable", "The connection to the source failed while reading it")))
    res.on("close", () => finish(failure("source_unreachable", "The source closed the connection before the end of the file")))
  })
  const deadline = setTimeout(() => finish(failure("source_timeout", `The source did not deliver the file within ${options.timeoutMs / 1000} s`)), options.timeoutMs)
  request.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === BLOCKED_ADDRESS_CODE) return finish(failure("source_blocked", "The source host resolves to a private, loopback or reserved address"))
    finish(failure("source_unreachable", `The source could not be reached (${error.code ?? "connection failed"})`))
  })
  request.end()
  return Effect.sync(() => {
    clearTimeout(deadline)
    response?.destroy()
    request.destroy()
  })
}).pipe(Effect.withSpan("userImport.fetchSource"))
