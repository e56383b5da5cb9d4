import type { IncomingHttpHeaders } from "node:http"
import { StringDecoder } from "node:string_decoder"
import { BLOCKED_ADDRESS_CODE } from "../../platform/outbound/guarded-lookup.js"

// What the delivery log keeps of one attempt's answer (docs/decisions/events-and-webhooks.md,
// "Attempt request and response"): a bounded snippet of the body, a bounded set of headers, or
// which transport error ended it. Bounded so that a receiver cannot fill the database.

/** At most this much of a response body is kept; the rest is counted as truncated. */
export const RESPONSE_SNIPPET_BYTES = 4 * 1024
/** At most this many response headers are kept, in the order the receiver sent them. */
export const MAX_RESPONSE_HEADERS = 32
/** A longer header value is cut to this many characters. */
export const MAX_HEADER_VALUE_CHARS = 512
/**
 * Never kept: cookies and authentication challenges are the receiver's session material, not
 * something an operator needs to read a delivery log.
 */
const DROPPED_HEADERS = new Set(["set-cookie", "set-cookie2", "www-authenticate", "proxy-authenticate"])

/**
 * Why an attempt got no HTTP response. Finer than the schedule's `failure_reason` (which only
 * needs timeout / blocked / other): what an operator needs to fix the receiver.
 */
export type TransportError =
  | "timeout"
  | "connection_refused"
  | "connection_reset"
  | "dns_failure"
  | "tls_error"
  | "blocked_address"
  | "connection_failed"

const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH|EPROTO$)/

/** The transport error of a socket or request error (its node `code`; the message is not kept). */
export const transportErrorOf = (error: NodeJS.ErrnoException): TransportError => {
  const code = error.code ?? ""
  if (code === BLOCKED_ADDRESS_CODE) return "blocked_address"
  if (code === "ECONNREFUSED") return "connection_refused"
  if (code === "ECONNRESET" || code === "EPIPE") return "connection_reset"
  if (code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "EAI_FAIL" || code === "EAI_NONAME") return "dns_failure"
  if (TLS_CODE.test(code)) return "tls_error"
  return "connection_failed"
}

/** The headers kept of a response: names lowercased, cookies dropped, count and lengths bounded. */
export const keptHeaders = (headers: IncomingHttpHeaders): Record<string, string> => {
  const kept: Record<string, string> = {}
  let count = 0
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || DROPPED_HEADERS.has(name)) continue
    if (count++ >= MAX_RESPONSE_HEADERS) break
    kept[name] = textOf(Array.isArray(value) ? value.join(", ") : value).slice(0, MAX_HEADER_VALUE_CHARS)
  }
  return kept
}

/** Postgres text refuses NUL: a receiver's NUL is kept as U+FFFD, as an undecodable byte is. */
const textOf = (s: string) => s.replaceAll("\u0000", "\uFFFD")

/**
 * The first RESPONSE_SNIPPET_BYTES of a response body, decoded as UTF-8 (a character cut by
 * the limit is dropped, not half-kept), and whether more arrived.
 */
export const makeSnippet = () => {
  const chunks: Array<Buffer> = []
  let kept = 0
  let truncated = false
  return {
    push: (chunk: Buffer) => {
      if (kept >= RESPONSE_SNIPPET_BYTES) {
        if (chunk.length > 0) truncated = true
        return
      }
      const room = RESPONSE_SNIPPET_BYTES - kept
      if (chunk.length > room) truncated = true
      const part = chunk.length > room ? chunk.subarray(0, room) : chunk
      chunks.push(part)
      kept += part.length
    },
    /** The snippet so far; `truncated` also when the body was cut short by the read limit or time-out. */
    result: (cutShort = false) => ({
      body: textOf(new StringDecoder("utf8").write(Buffer.concat(chunks))),
      truncated: truncated || cutShort,
    }),
  }
}
