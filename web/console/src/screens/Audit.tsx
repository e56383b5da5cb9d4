import { useCallback, useEffect, useState } from "react"
import { ApiProblem, list } from "../api.js"
import type { Environment, Item } from "../api/types.js"
import { Field, FormError, Pager, Section, Select, describe } from "../ui.js"
import { EnvironmentPicker } from "./EnvironmentPicker.js"

type AuditEvent = Item<"/v1/audit-events">
const ACTORS = ["any", "end_user", "workspace_member", "api_key", "system"] as const
const RESULTS = ["any", "success", "failure"] as const

/** Audit events of an Environment, filtered by action, actor type and result, newest first, keyset-paged. */
export function Audit(props: { workspaceId: string }) {
  const [environment, setEnvironment] = useState<Environment | undefined>()
  const [action, setAction] = useState("")
  const [actor, setActor] = useState<(typeof ACTORS)[number]>("any")
  const [result, setResult] = useState<(typeof RESULTS)[number]>("any")
  const [filters, setFilters] = useState("")
  const [cursors, setCursors] = useState<ReadonlyArray<string | null>>([null])
  const [events, setEvents] = useState<ReadonlyArray<AuditEvent>>([])
  const [next, setNext] = useState<string | null>(null)
  const [error, setError] = useState<string | undefined>()
  const env = environment?.id

  const load = useCallback(async () => {
    if (env === undefined) return
    setError(undefined)
    try {
      const page = await list<AuditEvent>(
        `/v1/audit-events?environment_id=${env}${filters}`,
        cursors[cursors.length - 1] ?? null,
      )
      setEvents(page.body.data)
      setNext(page.body.next_cursor)
    } catch (e) {
      setError(e instanceof ApiProblem ? describe(e) : String(e))
    }
  }, [env, filters, cursors])
  useEffect(() => {
    void load()
  }, [load])

  return (
    <>
      <h1>Audit events</h1>
      <EnvironmentPicker
        workspaceId={props.workspaceId}
        value={env}
        onChange={(e) => {
          setEnvironment(e)
          setCursors([null])
        }}
      />
      {env && (
        <form
          onSubmit={(e) => {
            e.preventDefault()
            const q = new URLSearchParams()
            if (action !== "") q.set("action", action)
            if (actor !== "any") q.set("actor_type", actor)
            if (result !== "any") q.set("result", result)
            setFilters(q.size === 0 ? "" : `&${q}`)
            setCursors([null])
          }}
        >
          <div className="columns">
            <Field label="Action" name="action" value={action} onChange={setAction} placeholder="user.blocked" />
            <Select label="Actor type" value={actor} options={ACTORS} onChange={setActor} />
            <Select label="Result" value={result} options={RESULTS} onChange={setResult} />
          </div>
          <button type="submit">Apply filters</button>
        </form>
      )}
      <FormError message={error} />
      {env && (
        <Section title="Events">
          <table tabIndex={0}>
            <thead>
              <tr>
                <th scope="col">At</th>
                <th scope="col">Action</th>
                <th scope="col">Actor</th>
                <th scope="col">Subject</th>
                <th scope="col">Result</th>
              </tr>
            </thead>
            <tbody>
              {events.map((e) => (
                <tr key={e.id}>
                  <td>{e.created_at}</td>
                  <td>{e.action}</td>
                  <td>
                    {e.actor_type}
                    {e.actor_id ? ` ${e.actor_id}` : ""}
                  </td>
                  <td>{e.subject_type ? `${e.subject_type} ${e.subject_id ?? ""}` : "-"}</td>
                  <td>{e.result}</td>
                </tr>
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
  )
}
