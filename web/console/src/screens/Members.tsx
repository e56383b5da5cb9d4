import { useCallback, useEffect, useState } from "react"
import { ApiProblem, call, list } from "../api.js"
import type { Role, Session } from "../session.js"
import { ConfirmButton, Field, FormError, Pager, Section, Select, describe, useApiForm } from "../ui.js"

interface Member {
  platform_user_id: string
  email: string
  role: Role
  created_at: string
}
const ROLES: ReadonlyArray<Role> = ["owner", "admin", "member"]

/**
 * Members of the Workspace with their roles. Only an Owner invites, changes roles and removes:
 * others see the controls disabled, and the server refuses them anyway (403).
 */
export function Members(props: { workspace: Session["workspaces"][number]; me: string }) {
  const isOwner = props.workspace.role === "owner"
  const [members, setMembers] = useState<ReadonlyArray<Member>>([])
  const [cursors, setCursors] = useState<ReadonlyArray<string | null>>([null])
  const [next, setNext] = useState<string | null>(null)
  const [error, setError] = useState<string | undefined>()
  const [email, setEmail] = useState("")
  const [role, setRole] = useState<Role>("member")
  const form = useApiForm(["email", "role"])

  const load = useCallback(async (cursor: string | null) => {
    const page = await list<Member>("/console/api/members", cursor)
    setMembers(page.body.data)
    setNext(page.body.next_cursor)
  }, [])
  useEffect(() => {
    void load(cursors[cursors.length - 1] ?? null)
  }, [load, cursors])

  const act = async (action: () => Promise<unknown>) => {
    setError(undefined)
    try {
      await action()
      await load(cursors[cursors.length - 1] ?? null)
    } catch (e) {
      setError(e instanceof ApiProblem ? describe(e) : String(e))
    }
  }

  return (
    <>
      <h1>Members of {props.workspace.name}</h1>
      {!isOwner && (
        <p className="hint">You are {props.workspace.role}: only an Owner can invite members or change roles.</p>
      )}
      <FormError message={error} />
      <Section title="Members">
        <table tabIndex={0}>
          <thead>
            <tr>
              <th scope="col">Email</th>
              <th scope="col">Role</th>
              <th scope="col">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {members.map((m) => (
              <tr key={m.platform_user_id}>
                <td>
                  {m.email}
                  {m.platform_user_id === props.me ? " (you)" : ""}
                </td>
                <td>
                  <select
                    aria-label={`Role of ${m.email}`}
                    value={m.role}
                    disabled={!isOwner}
                    onChange={(e) =>
                      void act(() =>
                        call(`/console/api/members/${m.platform_user_id}`, {
                          method: "PATCH",
                          body: { role: e.target.value },
                        }),
                      )
                    }
                  >
                    {ROLES.map((r) => (
                      <option key={r} value={r}>
                        {r}
                      </option>
                    ))}
                  </select>
                </td>
                <td>
                  <ConfirmButton
                    label="Remove"
                    disabled={!isOwner}
                    question={`Remove ${m.email} from ${props.workspace.name}?`}
                    onConfirm={() =>
                      act(() => call(`/console/api/members/${m.platform_user_id}`, { method: "DELETE" }))
                    }
                  />
                </td>
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
      <Section title="Invite a member">
        <form
          onSubmit={form.submit(async (idempotencyKey) => {
            await call("/console/api/invitations", { method: "POST", idempotencyKey, body: { email, role } })
            setEmail("")
            await load(cursors[cursors.length - 1] ?? null)
          })}
        >
          <FormError message={form.formError} />
          <Field
            label="Email address"
            name="email"
            type="email"
            value={email}
            onChange={setEmail}
            error={form.errors["email"]}
            required
          />
          <Select label="Role" value={role} options={ROLES} onChange={setRole} />
          <button type="submit" className="primary" disabled={form.busy || !isOwner}>
            Send invitation
          </button>
        </form>
      </Section>
    </>
  )
}
