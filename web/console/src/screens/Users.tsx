import { useCallback, useEffect, useState } from "react"
import { ApiProblem, call, list } from "../api.js"
import type { Environment, User } from "../api/types.js"
import { ConfirmButton, Field, FormError, Pager, Section, ShownOnce, describe, useApiForm } from "../ui.js"
import { EnvironmentPicker } from "./EnvironmentPicker.js"
import { UserRecords } from "./UserRecords.js"

/** Users of an Environment: search, keyset pages, detail (UserRecords), block/unblock, revoke sessions, delete, impersonate. */
export function Users(props: { workspaceId: string }) {
  const [environment, setEnvironment] = useState<Environment | undefined>()
  const [search, setSearch] = useState("")
  const [applied, setApplied] = useState("")
  const [cursors, setCursors] = useState<ReadonlyArray<string | null>>([null])
  const [users, setUsers] = useState<ReadonlyArray<User>>([])
  const [next, setNext] = useState<string | null>(null)
  const [selected, setSelected] = useState<{ user: User; etag: string | undefined; revision: number } | undefined>()
  const [error, setError] = useState<string | undefined>()
  const [reason, setReason] = useState("")
  const [impersonationReason, setImpersonationReason] = useState("")
  const [minutes, setMinutes] = useState("5")
  const [impersonating, setImpersonating] = useState<
    { email: string; expires_at: string; access_token: string } | undefined
  >()
  const impersonationForm = useApiForm(["reason", "duration_minutes", "user_id"])

  const env = environment?.id
  const load = useCallback(async () => {
    if (env === undefined) return
    const q = `/v1/users?environment_id=${env}${applied === "" ? "" : `&search=${encodeURIComponent(applied)}`}`
    const page = await list<User>(q, cursors[cursors.length - 1] ?? null)
    setUsers(page.body.data)
    setNext(page.body.next_cursor)
  }, [env, applied, cursors])
  useEffect(() => {
    void load()
  }, [load])

  const open = async (id: string) => {
    const answer = await call<User>(`/v1/users/${id}?environment_id=${env}`)
    setSelected((before) => ({ user: answer.body, etag: answer.etag, revision: (before?.revision ?? 0) + 1 }))
  }
  const act = async (action: () => Promise<unknown>) => {
    setError(undefined)
    try {
      await action()
      if (selected) await open(selected.user.id).catch(() => setSelected(undefined))
      await load()
    } catch (e) {
      setError(e instanceof ApiProblem ? describe(e) : String(e))
      // A stale ETag: show the user as it now is, so the next attempt sends its ETag.
      if (selected && e instanceof ApiProblem && e.status === 412) await open(selected.user.id).catch(() => undefined)
    }
  }

  return (
    <>
      <h1>Users</h1>
      {impersonating && (
        <div className="once" role="status" aria-label="Impersonation">
          <p>
            Impersonating <strong>{impersonating.email}</strong> until {impersonating.expires_at}.
          </p>
          <ShownOnce label="Impersonation access token" value={impersonating.access_token} />
          <button
            type="button"
            className="danger"
            onClick={() =>
              void act(async () => {
                await call("/v1/impersonation/stop", { method: "POST", body: {} })
                setImpersonating(undefined)
              })
            }
          >
            Stop impersonation
          </button>
        </div>
      )}
      <EnvironmentPicker
        workspaceId={props.workspaceId}
        value={env}
        onChange={(e) => {
          setEnvironment(e)
          setSelected(undefined)
          setCursors([null])
        }}
      />
      {env && (
        <>
          {/* biome-ignore lint/a11y/useSemanticElements: a form with role search is what browsers and screen readers know; <search> is too new */}
          <form
            role="search"
            onSubmit={(e) => {
              e.preventDefault()
              setApplied(search)
              setCursors([null])
            }}
          >
            <Field label="Search by email or name" name="search" value={search} onChange={setSearch} />
            <button type="submit">Search</button>
          </form>
          <Section title="Users of this Environment">
            <table tabIndex={0}>
              <thead>
                <tr>
                  <th scope="col">Email</th>
                  <th scope="col">Status</th>
                  <th scope="col">Last sign-in</th>
                </tr>
              </thead>
              <tbody>
                {users.map((u) => (
                  <tr key={u.id}>
                    <td>
                      <button type="button" className="link" onClick={() => void open(u.id)}>
                        {u.email}
                      </button>
                    </td>
                    <td>{u.status}</td>
                    <td>{u.last_login_at ?? "never"}</td>
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
        </>
      )}
      <FormError message={error} />
      {selected && (
        <Section title={`User ${selected.user.email}`}>
          <dl className="facts">
            <dt>ID</dt>
            <dd>
              <code>{selected.user.id}</code>
            </dd>
            <dt>Status</dt>
            <dd>
              {selected.user.status}
              {selected.user.blocked_reason ? ` (${selected.user.blocked_reason})` : ""}
            </dd>
            <dt>Email verified</dt>
            <dd>{selected.user.email_verified ? "yes" : "no"}</dd>
            <dt>Name</dt>
            <dd>{selected.user.name ?? "-"}</dd>
            <dt>Created</dt>
            <dd>{selected.user.created_at}</dd>
          </dl>
          <div className="row start">
            {selected.user.status === "active" && (
              <>
                <Field label="Reason for blocking (optional)" name="block-reason" value={reason} onChange={setReason} />
                <ConfirmButton
                  label="Block"
                  question={`Block ${selected.user.email}? Their sessions end and they cannot sign in.`}
                  onConfirm={() =>
                    act(() =>
                      call(`/v1/users/${selected.user.id}/block?environment_id=${env}`, {
                        method: "POST",
                        body: reason === "" ? {} : { reason },
                      }),
                    )
                  }
                />
              </>
            )}
            {selected.user.status === "blocked" && (
              <button
                type="button"
                onClick={() =>
                  void act(() =>
                    call(`/v1/users/${selected.user.id}/unblock?environment_id=${env}`, { method: "POST", body: {} }),
                  )
                }
              >
                Unblock
              </button>
            )}
            <ConfirmButton
              label="Revoke all sessions"
              question={`End every session of ${selected.user.email}?`}
              onConfirm={() =>
                act(() => call(`/v1/users/${selected.user.id}/sessions?environment_id=${env}`, { method: "DELETE" }))
              }
            />
            {selected.user.status !== "pending_deletion" && (
              <ConfirmButton
                label="Delete user"
                question={`Delete ${selected.user.email}? The account is purged after the retention period.`}
                onConfirm={() =>
                  act(() =>
                    call(`/v1/users/${selected.user.id}?environment_id=${env}`, {
                      method: "DELETE",
                      ifMatch: selected.etag,
                    }),
                  )
                }
              />
            )}
          </div>
          <UserRecords
            environmentId={env as string}
            userId={selected.user.id}
            email={selected.user.email}
            revision={selected.revision}
          />
          {selected.user.status === "active" && !impersonating && (
            <form
              onSubmit={impersonationForm.submit(async () => {
                const answer = await call<{ target_user: { email: string }; expires_at: string; access_token: string }>(
                  `/v1/impersonation?environment_id=${env}`,
                  {
                    method: "POST",
                    body: { user_id: selected.user.id, reason: impersonationReason, duration_minutes: Number(minutes) },
                  },
                )
                setImpersonating({
                  email: answer.body.target_user.email,
                  expires_at: answer.body.expires_at,
                  access_token: answer.body.access_token,
                })
              })}
            >
              <h3>Impersonate</h3>
              <FormError message={impersonationForm.formError} />
              <Field
                label="Reason (10 to 1000 characters, audited)"
                name="impersonation-reason"
                value={impersonationReason}
                onChange={setImpersonationReason}
                error={impersonationForm.errors["reason"]}
                required
              />
              <Field
                label="Duration in minutes (1 to 15)"
                name="duration"
                type="number"
                value={minutes}
                onChange={setMinutes}
                error={impersonationForm.errors["duration_minutes"]}
              />
              <button type="submit" disabled={impersonationForm.busy}>
                Start impersonation
              </button>
            </form>
          )}
        </Section>
      )}
    </>
  )
}
