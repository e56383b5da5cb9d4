import { Fragment, useCallback, useEffect, useState } from "react"
import { ApiProblem, call, list } from "../api.js"
import type { ApiAnswer, Environment, Webhook, WebhookDelivery as Delivery } from "../api/types.js"
import {
  CheckboxGroup,
  ConfirmButton,
  Field,
  FormError,
  Pager,
  Section,
  ShownOnce,
  describe,
  useApiForm,
} from "../ui.js"
import { EnvironmentPicker } from "./EnvironmentPicker.js"
import { WebhookAttempt } from "./WebhookAttempt.js"

const EVENT_TYPES = [
  "user.created",
  "user.updated",
  "user.blocked",
  "user.deleted",
  "login.succeeded",
  "login.failed",
  "session.created",
  "session.revoked",
  "passkey.created",
  "passkey.deleted",
  "identity.linked",
  "identity.unlinked",
  "mau.threshold_reached",
] as const

/** What sending a test answers: the test is sent during the request and is not an entry of the delivery log. */
type TestAnswer = ApiAnswer<"/v1/webhooks/{webhookId}/test", "post">

/** Webhooks of an Environment: create with event selection (secret shown once), the delivery log per attempt, send a test, rotate the secret. */
export function Webhooks(props: { workspaceId: string }) {
  const [environment, setEnvironment] = useState<Environment | undefined>()
  const [hooks, setHooks] = useState<ReadonlyArray<Webhook>>([])
  const [selected, setSelected] = useState<string | undefined>()
  const [deliveries, setDeliveries] = useState<ReadonlyArray<Delivery>>([])
  const [cursors, setCursors] = useState<ReadonlyArray<string | null>>([null])
  const [next, setNext] = useState<string | null>(null)
  const [url, setUrl] = useState("")
  const [events, setEvents] = useState<ReadonlyArray<string>>(["user.blocked"])
  const [secret, setSecret] = useState<string | undefined>()
  const [tested, setTested] = useState<TestAnswer | undefined>()
  const [opened, setOpened] = useState<ReadonlySet<string>>(new Set())
  const toggle = (id: string) => {
    const next = new Set(opened)
    if (!next.delete(id)) next.add(id)
    setOpened(next)
  }
  const [error, setError] = useState<string | undefined>()
  const form = useApiForm(["url", "event_types"])
  const env = environment?.id

  const loadHooks = useCallback(async () => {
    if (env !== undefined) setHooks((await list<Webhook>(`/v1/webhooks?environment_id=${env}`, null, 100)).body.data)
  }, [env])
  useEffect(() => {
    void loadHooks()
  }, [loadHooks])
  const loadDeliveries = useCallback(async () => {
    if (selected === undefined) return setDeliveries([])
    const page = await list<Delivery>(`/v1/webhooks/${selected}/deliveries`, cursors[cursors.length - 1] ?? null)
    setDeliveries(page.body.data)
    setNext(page.body.next_cursor)
  }, [selected, cursors])
  useEffect(() => {
    void loadDeliveries()
  }, [loadDeliveries])

  const act = async (action: () => Promise<unknown>) => {
    setError(undefined)
    try {
      await action()
      await loadHooks()
      await loadDeliveries()
    } catch (e) {
      setError(e instanceof ApiProblem ? describe(e) : String(e))
    }
  }

  return (
    <>
      <h1>Webhooks</h1>
      <EnvironmentPicker
        workspaceId={props.workspaceId}
        value={env}
        onChange={(e) => {
          setEnvironment(e)
          setSelected(undefined)
        }}
      />
      <FormError message={error} />
      {env && (
        <>
          <Section title="Endpoints">
            <ul className="picklist">
              {hooks.map((h) => (
                <li key={h.id}>
                  <button
                    type="button"
                    aria-pressed={h.id === selected}
                    onClick={() => {
                      setSelected(h.id)
                      setTested(undefined)
                      setCursors([null])
                    }}
                  >
                    {h.url}
                  </button>
                </li>
              ))}
            </ul>
            <h3>Add an endpoint</h3>
            <form
              onSubmit={form.submit(async (idempotencyKey) => {
                const answer = await call<Webhook & { secret: string }>("/v1/webhooks", {
                  method: "POST",
                  idempotencyKey,
                  body: { environment_id: env, url, event_types: events },
                })
                setSecret(answer.body.secret)
                setUrl("")
                await loadHooks()
                setSelected(answer.body.id)
              })}
            >
              <FormError message={form.formError} />
              <Field
                label="Endpoint URL"
                name="url"
                type="url"
                value={url}
                onChange={setUrl}
                error={form.errors["url"]}
                required
                placeholder="https://example.com/webhooks"
              />
              <CheckboxGroup
                legend="Events"
                options={EVENT_TYPES}
                checked={events}
                onChange={setEvents}
                error={form.errors["event_types"]}
              />
              <button type="submit" className="primary" disabled={form.busy}>
                Add endpoint
              </button>
            </form>
            {secret && <ShownOnce label="Signing secret" value={secret} />}
          </Section>
          {selected && (
            <Section title="Delivery log">
              <div className="row start">
                <button type="button" onClick={() => void loadDeliveries()}>
                  Refresh
                </button>
                <button
                  type="button"
                  onClick={() =>
                    void act(async () => {
                      setTested(undefined)
                      setTested(
                        (await call<TestAnswer>(`/v1/webhooks/${selected}/test`, { method: "POST", body: {} })).body,
                      )
                    })
                  }
                >
                  Send a test
                </button>
                <ConfirmButton
                  label="Rotate secret"
                  question="Rotate the signing secret? The old one keeps verifying for 24 hours."
                  onConfirm={() =>
                    act(async () =>
                      setSecret(
                        (
                          await call<{ secret: string }>(`/v1/webhooks/${selected}/rotate-secret`, {
                            method: "POST",
                            body: {},
                          })
                        ).body.secret,
                      ),
                    )
                  }
                />
                <ConfirmButton
                  label="Delete endpoint"
                  question="Delete this webhook endpoint? No further events are sent to it."
                  onConfirm={() =>
                    act(async () => {
                      await call(`/v1/webhooks/${selected}`, { method: "DELETE" })
                      setSelected(undefined)
                    })
                  }
                />
              </div>
              {tested && (
                <p role="status" aria-label="Test result">
                  {tested.delivered ? "Test delivered" : "Test not delivered"}
                  {tested.response_status === null ? " (no answer)" : `: HTTP ${tested.response_status}`}
                  {tested.response_time_ms === null ? "" : ` in ${tested.response_time_ms} ms`} at {tested.requested_at}
                </p>
              )}
              <table tabIndex={0}>
                <thead>
                  <tr>
                    <th scope="col">Event</th>
                    <th scope="col">Attempt</th>
                    <th scope="col">Status</th>
                    <th scope="col">Response</th>
                    <th scope="col">Duration</th>
                    <th scope="col">At</th>
                    <th scope="col">Event ID</th>
                    <th scope="col">Request and response</th>
                  </tr>
                </thead>
                <tbody>
                  {deliveries.map((d) => (
                    <Fragment key={d.id}>
                      <tr>
                        <td>{d.event_type}</td>
                        <td>{d.attempt}</td>
                        <td>{d.status}</td>
                        <td>{d.response_status_code ?? "-"}</td>
                        <td>{d.duration_ms === null ? "-" : `${d.duration_ms} ms`}</td>
                        <td>{d.occurred_at}</td>
                        <td>
                          <code>{d.event_id}</code>
                        </td>
                        <td>
                          <button
                            type="button"
                            aria-expanded={opened.has(d.id)}
                            aria-controls={opened.has(d.id) ? `attempt-${d.id}` : undefined}
                            aria-label={`Details of attempt ${d.attempt} of ${d.event_type}`}
                            className="disclosure"
                            onClick={() => toggle(d.id)}
                          >
                            Details
                          </button>
                        </td>
                      </tr>
                      {opened.has(d.id) && selected && (
                        <tr>
                          <td colSpan={8}>
                            <WebhookAttempt webhookId={selected} deliveryId={d.id} id={`attempt-${d.id}`} />
                          </td>
                        </tr>
                      )}
                    </Fragment>
                  ))}
                </tbody>
              </table>
              <Pager
                hasPrevious={cursors.length > 1}
                nextCursor={next}
                onPrevious={() => setCursors(cursors.slice(0, -1))}
                onNext={() => setCursors([...cursors, next])}
              />
            </Section>
          )}
        </>
      )}
    </>
  )
}
