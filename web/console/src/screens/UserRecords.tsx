import { useCallback, useEffect, useState } from "react"
import { ApiProblem, call, download, list } from "../api.js"
import type { AuditEvent, UserExportJob, UserIdentity, UserPasskey, UserSession } from "../api/types.js"
import { ConfirmButton, FormError, describe } from "../ui.js"

interface Records {
  identities: ReadonlyArray<UserIdentity>
  passkeys: ReadonlyArray<UserPasskey>
  sessions: ReadonlyArray<UserSession>
  events: ReadonlyArray<AuditEvent>
}

/** How many of the user's newest audit events the detail shows (the Audit screen has them all). */
const RECENT_EVENTS = 10

/**
 * What a user's detail lists beside the profile: linked identities, passkeys, live sessions (each
 * revocable), the newest audit events about them, and their data export with its download.
 */
export function UserRecords(props: { environmentId: string; userId: string; email: string; revision: number }) {
  const { environmentId: env, userId } = props
  const [records, setRecords] = useState<Records | undefined>()
  const [exportJob, setExportJob] = useState<UserExportJob | undefined>()
  const [error, setError] = useState<string | undefined>()

  const load = useCallback(async () => {
    const q = `environment_id=${env}`
    const [identities, passkeys, sessions, events] = await Promise.all([
      list<UserIdentity>(`/v1/users/${userId}/identities?${q}`, null, 100),
      list<UserPasskey>(`/v1/users/${userId}/passkeys?${q}`, null, 100),
      list<UserSession>(`/v1/users/${userId}/sessions?${q}`, null, 100),
      list<AuditEvent>(`/v1/audit-events?${q}&subject_type=user&subject_id=${userId}`, null, RECENT_EVENTS),
    ])
    setRecords({
      identities: identities.body.data,
      passkeys: passkeys.body.data,
      sessions: sessions.body.data,
      events: events.body.data,
    })
  }, [env, userId])
  // biome-ignore lint/correctness/useExhaustiveDependencies: the revision is the parent's signal that the user changed (blocked, deleted): reload then too
  useEffect(() => {
    setExportJob(undefined)
    setError(undefined)
    load().catch((e) => setError(e instanceof ApiProblem ? describe(e) : String(e)))
  }, [load, props.revision])

  const act = async (action: () => Promise<unknown>) => {
    setError(undefined)
    try {
      await action()
      await load()
    } catch (e) {
      setError(e instanceof ApiProblem ? describe(e) : String(e))
    }
  }

  return (
    <>
      <FormError message={error} />
      <h3>Identities</h3>
      {records?.identities.length === 0 ? (
        <p>No linked identity (signs in by email or passkey only).</p>
      ) : (
        <table aria-label="Identities" tabIndex={0}>
          <thead>
            <tr>
              <th scope="col">Provider</th>
              <th scope="col">Email</th>
              <th scope="col">Linked</th>
              <th scope="col">Last used</th>
            </tr>
          </thead>
          <tbody>
            {records?.identities.map((i) => (
              <tr key={i.identity_id}>
                <td>{i.provider}</td>
                <td>{i.email ?? "-"}</td>
                <td>{i.linked_at}</td>
                <td>{i.last_used_at ?? "never"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h3>Passkeys</h3>
      {records?.passkeys.length === 0 ? (
        <p>No passkey registered.</p>
      ) : (
        <table aria-label="Passkeys" tabIndex={0}>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Kind</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
            </tr>
          </thead>
          <tbody>
            {records?.passkeys.map((p) => (
              <tr key={p.passkey_id}>
                <td>{p.name ?? "-"}</td>
                <td>{p.backed_up ? "synced" : (p.device_type ?? "device-bound")}</td>
                <td>{p.created_at}</td>
                <td>{p.last_used_at ?? "never"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h3>Sessions</h3>
      {records?.sessions.length === 0 ? (
        <p>No live session.</p>
      ) : (
        <table aria-label="Sessions" tabIndex={0}>
          <thead>
            <tr>
              <th scope="col">Device</th>
              <th scope="col">Method</th>
              <th scope="col">Last active</th>
              <th scope="col">Action</th>
            </tr>
          </thead>
          <tbody>
            {records?.sessions.map((s) => (
              <tr key={s.session_id}>
                <td>{s.device_name ?? "-"}</td>
                <td>{s.method}</td>
                <td>{s.last_active_at}</td>
                <td>
                  <ConfirmButton
                    label="Revoke"
                    question={`End the ${s.device_name ?? s.method} session of ${props.email}?`}
                    onConfirm={() =>
                      act(() =>
                        call(`/v1/users/${userId}/sessions/${s.session_id}?environment_id=${env}`, {
                          method: "DELETE",
                        }),
                      )
                    }
                  />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h3>Recent events</h3>
      {records?.events.length === 0 ? (
        <p>No event recorded about this user.</p>
      ) : (
        <table aria-label="Recent events" tabIndex={0}>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Action</th>
              <th scope="col">Actor</th>
              <th scope="col">Result</th>
            </tr>
          </thead>
          <tbody>
            {records?.events.map((e) => (
              <tr key={e.id}>
                <td>{e.created_at}</td>
                <td>{e.action}</td>
                <td>{e.actor_type}</td>
                <td>{e.result}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h3>Data export</h3>
      <p>Everything stored about this user (profile, identities, passkeys, sessions) as one JSON file.</p>
      <div className="row start">
        <button
          type="button"
          onClick={() =>
            void act(async () => {
              const job = await call<UserExportJob>("/v1/user-export-jobs", {
                method: "POST",
                body: { environment_id: env, target_user_id: userId },
              })
              setExportJob(job.body)
            })
          }
        >
          Export user data
        </button>
        {exportJob && (
          <p role="status" aria-label="Export">
            {exportJob.status}
            {exportJob.size_bytes === null ? "" : `, ${exportJob.size_bytes} bytes`}
            {exportJob.download_expires_at ? `, download until ${exportJob.download_expires_at}` : ""}
            {exportJob.error ? `: ${exportJob.error}` : ""}
          </p>
        )}
        {exportJob?.download_url && (
          <button
            type="button"
            onClick={() => void act(() => download(new URL(exportJob.download_url as string).pathname))}
          >
            Download export
          </button>
        )}
      </div>
    </>
  )
}
