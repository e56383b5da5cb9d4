import { useEffect, useState } from "react"
import { ApiProblem, call } from "../api.js"
import type { WebhookDeliveryDetail } from "../api/types.js"
import { describe } from "../ui.js"

/** JSON shown indented; anything else (or a truncated snippet, which does not parse) as it came. */
const pretty = (text: string) => {
  try {
    return JSON.stringify(JSON.parse(text), null, 2)
  } catch {
    return text
  }
}

/** A block of text named by its caption (a figure), scrollable and reachable by keyboard. */
function Shown(props: { caption: string; children: string }) {
  return (
    <figure>
      <figcaption>{props.caption}</figcaption>
      <pre tabIndex={0}>{props.children}</pre>
    </figure>
  )
}

const headerLines = (headers: Readonly<Record<string, string>>) =>
  Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}`)
    .join("\n")

/**
 * One attempt's request and response (GET /v1/webhooks/{id}/deliveries/{deliveryId}), loaded when
 * its disclosure opens. The API keeps bodies 30 days and shows them to webhooks:write holders only,
 * so a Member reads "Not allowed" here.
 */
export function WebhookAttempt(props: { webhookId: string; deliveryId: string; id: string }) {
  const [detail, setDetail] = useState<WebhookDeliveryDetail | undefined>()
  const [error, setError] = useState<string | undefined>()
  useEffect(() => {
    call<WebhookDeliveryDetail>(`/v1/webhooks/${props.webhookId}/deliveries/${props.deliveryId}`).then(
      (answer) => setDetail(answer.body),
      (e) => setError(e instanceof ApiProblem ? describe(e) : String(e)),
    )
  }, [props.webhookId, props.deliveryId])

  if (error !== undefined)
    return (
      <div id={props.id} role="alert">
        {error}
      </div>
    )
  if (detail === undefined)
    return (
      <div id={props.id} role="status">
        Loading…
      </div>
    )
  const { request, response, transport_error: transportError } = detail
  return (
    <section id={props.id} className="attempt" aria-label={`Attempt ${detail.attempt} of ${detail.event_type}`}>
      <h3>Request</h3>
      {request === null ? (
        <p>Not sent.</p>
      ) : (
        <>
          <Shown caption="Request headers">{`${request.method} ${request.url}\n${headerLines(request.headers)}`}</Shown>
          {request.body === null ? (
            <p>The body is no longer kept (30 days).</p>
          ) : (
            <Shown caption="Request body">{pretty(request.body)}</Shown>
          )}
        </>
      )}
      <h3>Response</h3>
      {transportError !== null && (
        <p className="form-error">
          No response ({transportError.code}): {transportError.message}
        </p>
      )}
      {response === null && transportError === null && <p>No response recorded.</p>}
      {response !== null && (
        <>
          <p>
            HTTP {response.status_code}
            {response.duration_ms === null ? "" : ` in ${response.duration_ms} ms`}
          </p>
          {response.headers === null ? (
            <p>Headers and body are no longer kept (30 days).</p>
          ) : (
            <>
              <Shown caption="Response headers">{headerLines(response.headers)}</Shown>
              <Shown caption="Response body">
                {response.body_truncated ? (response.body ?? "") : pretty(response.body ?? "")}
              </Shown>
              {response.body_truncated && <p>Only the first 4 KiB of the body is kept: it was truncated.</p>}
            </>
          )}
        </>
      )}
    </section>
  )
}
