import type { DeliveryDetailRow } from "../repo.js"
import { canonicalJson } from "../../platform/canonical-json.js"
import type { TransportError } from "./exchange.js"
import { deliveryHeaders } from "./signing.js"

// One attempt's request and response as the delivery log shows them (decisions, "Attempt
// request and response"). The request is rebuilt, not stored: the body is the stored envelope
// as canonical JSON and the timestamp the second the attempt was sent (occurred_at), exactly
// what sendNow signed (src/webhooks/tasks.ts); only the URL and the signature are stored.

const TRANSPORT_ERROR_MESSAGES: Record<TransportError, string> = {
  timeout: "The receiver did not answer within the time limit.",
  connection_refused: "The receiver's host refused the connection.",
  connection_reset: "The connection was closed before a response arrived.",
  dns_failure: "The receiver's host name could not be resolved.",
  tls_error: "The TLS handshake failed (certificate or protocol).",
  blocked_address:
    "Not sent: the URL, or an address its host resolves to, is private, loopback or reserved (SSRF guard).",
  connection_failed: "The connection failed.",
}

/** The request of a sent attempt; null for one never sent (or settled before requests were kept). */
export const attemptRequest = (row: DeliveryDetailRow) => {
  if (row.request_url === null || row.request_signature === null) return null
  const body = row.envelope === null ? null : canonicalJson(row.envelope)
  return {
    url: row.request_url,
    method: "POST" as const,
    headers: {
      ...deliveryHeaders({
        eventId: row.event_id,
        timestampSeconds: Math.floor(row.occurred_at.getTime() / 1000),
        signature: row.request_signature,
      }),
      ...(body === null ? {} : { "content-length": String(Buffer.byteLength(body, "utf8")) }),
    },
    body,
  }
}

/** The HTTP response of a sent attempt, if one came. */
export const attemptResponse = (row: DeliveryDetailRow) =>
  row.request_url === null || row.response_status_code === null
    ? null
    : {
        status_code: row.response_status_code,
        headers: row.response_headers,
        body: row.response_body,
        body_truncated: row.response_body_truncated ?? false,
        duration_ms: row.duration_ms,
      }

export const attemptTransportError = (row: DeliveryDetailRow) => {
  const code = row.transport_error as TransportError | null
  return code === null ? null : { code, message: TRANSPORT_ERROR_MESSAGES[code] ?? "The send failed." }
}
