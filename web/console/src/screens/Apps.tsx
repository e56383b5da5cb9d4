import { useCallback, useEffect, useState } from "react"
import { call, list } from "../api.js"
import type { Client, ClientCreated, CreateClient, Environment, Project } from "../api/types.js"
import type { Session } from "../session.js"
import { ConfirmButton, Field, FormError, Pager, Section, Select, ShownOnce, useApiForm } from "../ui.js"
import { ConnectPanel } from "./ConnectPanel.js"

type ClientType = CreateClient["client_type"]
const CLIENT_TYPES: ReadonlyArray<ClientType> = ["web_bff", "web_spa", "react_native"]
const GUIDANCE: Record<ClientType, string> = {
  web_bff: "A server-side web app: it keeps a client secret and exchanges the code on the server.",
  web_spa: "A single-page app in the browser: no secret (PKCE), the page's origin must be allowed.",
  react_native: "A mobile app: no secret (PKCE), a custom-scheme or Universal Link redirect URI.",
}
const lines = (text: string) =>
  text
    .split(/[\n,]/)
    .map((s) => s.trim())
    .filter((s) => s !== "")

/** Keyset paging over one list endpoint. */
function usePaged<T>(path: string | undefined) {
  const [cursors, setCursors] = useState<ReadonlyArray<string | null>>([null])
  const [items, setItems] = useState<ReadonlyArray<T>>([])
  const [next, setNext] = useState<string | null>(null)
  const reload = useCallback(async () => {
    if (path === undefined) return setItems([])
    const page = await list<T>(path, cursors[cursors.length - 1] ?? null)
    setItems(page.body.data)
    setNext(page.body.next_cursor)
  }, [path, cursors])
  useEffect(() => {
    void reload()
  }, [reload])
  const pager = (
    <Pager
      hasPrevious={cursors.length > 1}
      nextCursor={next}
      onPrevious={() => setCursors(cursors.slice(0, -1))}
      onNext={() => setCursors([...cursors, next])}
    />
  )
  return { items, reload, pager }
}

export function Apps(props: { workspace: Session["workspaces"][number] }) {
  const ws = props.workspace.id
  const [projectId, setProjectId] = useState<string | undefined>()
  const [environmentId, setEnvironmentId] = useState<string | undefined>()
  const projects = usePaged<Project>(`/v1/projects?workspace_id=${ws}`)
  const environments = usePaged<Environment>(projectId ? `/v1/environments?project_id=${projectId}` : undefined)
  const clients = usePaged<Client>(environmentId ? `/v1/clients?environment_id=${environmentId}` : undefined)
  const environment = environments.items.find((e) => e.id === environmentId)

  const [projectName, setProjectName] = useState("")
  const projectForm = useApiForm(["name", "slug"])
  const [envName, setEnvName] = useState("")
  const [envType, setEnvType] = useState<"test" | "production">("test")
  const envForm = useApiForm(["name", "type"])
  const [clientName, setClientName] = useState("")
  const [clientType, setClientType] = useState<ClientType>("web_bff")
  const [redirectUris, setRedirectUris] = useState("")
  const [origins, setOrigins] = useState("")
  const clientForm = useApiForm(["name", "redirect_uris", "allowed_origins", "post_logout_redirect_uris"])
  const [created, setCreated] = useState<ClientCreated | undefined>()

  return (
    <>
      <h1>Projects and apps</h1>
      <div className="columns">
        <Section title="Projects">
          <ul className="picklist">
            {projects.items.map((p) => (
              <li key={p.id}>
                <button
                  type="button"
                  aria-pressed={p.id === projectId}
                  onClick={() => {
                    setProjectId(p.id)
                    setEnvironmentId(undefined)
                  }}
                >
                  {p.name}
                </button>
              </li>
            ))}
          </ul>
          {projects.pager}
          <form
            onSubmit={projectForm.submit(async (idempotencyKey) => {
              const answer = await call<Project>("/v1/projects", {
                method: "POST",
                idempotencyKey,
                body: { workspace_id: ws, name: projectName },
              })
              setProjectName("")
              await projects.reload()
              setProjectId(answer.body.id)
            })}
          >
            <FormError message={projectForm.formError} />
            <Field
              label="New project name"
              name="project-name"
              value={projectName}
              onChange={setProjectName}
              error={projectForm.errors["name"]}
              required
            />
            <button type="submit" disabled={projectForm.busy}>
              Create project
            </button>
          </form>
        </Section>
        {projectId && (
          <Section title="Environments">
            <ul className="picklist">
              {environments.items.map((e) => (
                <li key={e.id}>
                  <button type="button" aria-pressed={e.id === environmentId} onClick={() => setEnvironmentId(e.id)}>
                    {e.name} ({e.type})
                  </button>
                </li>
              ))}
            </ul>
            {environments.pager}
            <form
              onSubmit={envForm.submit(async (idempotencyKey) => {
                const answer = await call<Environment>("/v1/environments", {
                  method: "POST",
                  idempotencyKey,
                  body: { project_id: projectId, type: envType, name: envName },
                })
                setEnvName("")
                await environments.reload()
                setEnvironmentId(answer.body.id)
              })}
            >
              <FormError message={envForm.formError} />
              <Field
                label="New environment name"
                name="environment-name"
                value={envName}
                onChange={setEnvName}
                error={envForm.errors["name"]}
                required
              />
              <Select label="Type" value={envType} options={["test", "production"] as const} onChange={setEnvType} />
              <button type="submit" disabled={envForm.busy}>
                Create environment
              </button>
            </form>
          </Section>
        )}
      </div>
      {environment && (
        <>
          <Section title="Clients">
            <table tabIndex={0}>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Type</th>
                  <th scope="col">Client ID</th>
                  <th scope="col">
                    <span className="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {clients.items.map((c) => (
                  <tr key={c.id}>
                    <td>{c.name}</td>
                    <td>{c.client_type}</td>
                    <td>
                      <code>{c.id}</code>
                    </td>
                    <td>
                      {c.token_endpoint_auth_method !== "none" && (
                        <ConfirmButton
                          label="Rotate secret"
                          question={`Rotate the secret of ${c.name}? The current secret stops working.`}
                          onConfirm={async () => {
                            setCreated(
                              (
                                await call<ClientCreated>(`/v1/clients/${c.id}/rotate-secret`, {
                                  method: "POST",
                                  body: {},
                                })
                              ).body,
                            )
                          }}
                        />
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            {clients.pager}
            <h3>Register a client</h3>
            <form
              onSubmit={clientForm.submit(async (idempotencyKey) => {
                const body: CreateClient = {
                  environment_id: environment.id,
                  client_type: clientType,
                  name: clientName,
                  token_endpoint_auth_method: clientType === "web_bff" ? "client_secret_basic" : "none",
                  redirect_uris: lines(redirectUris),
                  ...(origins.trim() === "" ? {} : { allowed_origins: lines(origins) }),
                }
                const answer = await call<ClientCreated>("/v1/clients", { method: "POST", idempotencyKey, body })
                setCreated(answer.body)
                setClientName("")
                await clients.reload()
              })}
            >
              <FormError message={clientForm.formError} />
              <Select label="Client type" value={clientType} options={CLIENT_TYPES} onChange={setClientType} />
              <p className="hint">{GUIDANCE[clientType]}</p>
              <Field
                label="Client name"
                name="client-name"
                value={clientName}
                onChange={setClientName}
                error={clientForm.errors["name"]}
                required
              />
              <Field
                label="Redirect URIs (one per line or comma-separated)"
                name="redirect-uris"
                value={redirectUris}
                onChange={setRedirectUris}
                error={clientForm.errors["redirect_uris"]}
                placeholder="https://app.example.com/auth/callback"
              />
              {clientType === "web_spa" && (
                <Field
                  label="Allowed origins"
                  name="allowed-origins"
                  value={origins}
                  onChange={setOrigins}
                  error={clientForm.errors["allowed_origins"]}
                  placeholder="https://app.example.com"
                />
              )}
              <button type="submit" className="primary" disabled={clientForm.busy}>
                Create client
              </button>
            </form>
            {created?.client_secret && (
              <ShownOnce label={`Client secret of ${created.name}`} value={created.client_secret} />
            )}
          </Section>
          {created && <ConnectPanel issuer={environment.issuer} client={created} />}
        </>
      )}
    </>
  )
}
