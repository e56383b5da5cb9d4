import { useCallback, useEffect, useState } from "react"
import { ApiProblem, call, list } from "../api.js"
import type { ApiBody, ApiKey } from "../api/types.js"
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

type Scope = ApiBody<"/v1/api-keys", "post">["scopes"][number]
const SCOPES: ReadonlyArray<Scope> = [
  "workspaces:read",
  "projects:read",
  "projects:write",
  "environments:read",
  "environments:write",
  "clients:read",
  "clients:write",
  "users:read",
  "users:write",
  "users:block",
  "users:delete",
  "webhooks:read",
  "webhooks:write",
  "audit_events:read",
  "usage:read",
  "introspect",
]

/** API keys of the Workspace: create with scopes (the secret shown once), revoke. */
export function ApiKeys(props: { workspaceId: string }) {
  const [keys, setKeys] = useState<ReadonlyArray<ApiKey>>([])
  const [cursors, setCursors] = useState<ReadonlyArray<string | null>>([null])
  const [next, setNext] = useState<string | null>(null)
  const [name, setName] = useState("")
  const [scopes, setScopes] = useState<ReadonlyArray<Scope>>(["users:read"])
  const [secret, setSecret] = useState<string | undefined>()
  const [error, setError] = useState<string | undefined>()
  const form = useApiForm(["name", "scopes"])

  const load = useCallback(async () => {
    const page = await list<ApiKey>(
      `/v1/api-keys?workspace_id=${props.workspaceId}`,
      cursors[cursors.length - 1] ?? null,
    )
    setKeys(page.body.data)
    setNext(page.body.next_cursor)
  }, [props.workspaceId, cursors])
  useEffect(() => {
    void load()
  }, [load])

  return (
    <>
      <h1>API keys</h1>
      <FormError message={error} />
      <Section title="Keys">
        <table tabIndex={0}>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Scopes</th>
              <th scope="col">Status</th>
              <th scope="col">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {keys.map((k) => (
              <tr key={k.id}>
                <td>{k.name}</td>
                <td>{k.scopes.join(", ")}</td>
                <td>{k.revoked_at ? "revoked" : "active"}</td>
                <td>
                  {!k.revoked_at && (
                    <ConfirmButton
                      label="Revoke"
                      question={`Revoke the key ${k.name}? Calls made with it fail from now on.`}
                      onConfirm={async () => {
                        setError(undefined)
                        try {
                          await call(`/v1/api-keys/${k.id}/revoke`, { method: "POST", body: {} })
                          await load()
                        } catch (e) {
                          setError(e instanceof ApiProblem ? describe(e) : String(e))
                        }
                      }}
                    />
                  )}
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
      <Section title="Create an API key">
        <form
          onSubmit={form.submit(async (idempotencyKey) => {
            const answer = await call<{ secret: string }>("/v1/api-keys", {
              method: "POST",
              idempotencyKey,
              body: { workspace_id: props.workspaceId, name, scopes },
            })
            setSecret(answer.body.secret)
            setName("")
            await load()
          })}
        >
          <FormError message={form.formError} />
          <Field
            label="Key name"
            name="key-name"
            value={name}
            onChange={setName}
            error={form.errors["name"]}
            required
          />
          <CheckboxGroup
            legend="Scopes"
            options={SCOPES}
            checked={scopes}
            onChange={setScopes}
            error={form.errors["scopes"]}
          />
          <button type="submit" className="primary" disabled={form.busy}>
            Create key
          </button>
        </form>
        {secret && <ShownOnce label="API key" value={secret} />}
      </Section>
    </>
  )
}
