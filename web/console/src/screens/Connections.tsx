import { useCallback, useEffect, useState } from "react"
import { ApiProblem, call, list } from "../api.js"
import type { ApiBody, Environment, Item } from "../api/types.js"
import type { Session } from "../session.js"
import { ConfirmButton, Field, FormError, Section, Select, describe, useApiForm } from "../ui.js"
import { EnvironmentPicker } from "./EnvironmentPicker.js"

type Connection = Item<"/v1/connections">
type Provider = ApiBody<"/v1/connections", "post">["provider"]
const PROVIDERS: ReadonlyArray<Provider> = ["google", "apple", "github", "microsoft", "generic_oidc"]

/**
 * Social connections per provider: the `callback_url` to register at the provider, and the
 * Owner's confirmation a generic OIDC connection needs before it can be used.
 */
export function Connections(props: { workspace: Session["workspaces"][number] }) {
  const [environment, setEnvironment] = useState<Environment | undefined>()
  const [connections, setConnections] = useState<ReadonlyArray<Connection>>([])
  const [provider, setProvider] = useState<Provider>("google")
  const [providerKey, setProviderKey] = useState("")
  const [clientId, setClientId] = useState("")
  const [clientSecret, setClientSecret] = useState("")
  const [issuer, setIssuer] = useState("")
  const [error, setError] = useState<string | undefined>()
  const form = useApiForm(["provider_key", "provider_client_id", "provider_client_secret", "issuer"])
  const env = environment?.id
  const load = useCallback(async () => {
    if (env !== undefined)
      setConnections((await list<Connection>(`/v1/connections?environment_id=${env}`, null, 100)).body.data)
  }, [env])
  useEffect(() => {
    void load()
  }, [load])
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
      <h1>Connections</h1>
      <EnvironmentPicker workspaceId={props.workspace.id} value={env} onChange={setEnvironment} />
      <FormError message={error} />
      {env && (
        <>
          {connections.map((c) => (
            <Section key={c.id} title={`${c.provider} (${c.provider_key})`}>
              <dl className="facts">
                <dt>Callback URL</dt>
                <dd>
                  <code>{c.callback_url}</code>{" "}
                  <button type="button" onClick={() => void navigator.clipboard?.writeText(c.callback_url)}>
                    Copy
                  </button>
                </dd>
                <dt>Status</dt>
                <dd>{c.status}</dd>
                {c.provider === "generic_oidc" && (
                  <>
                    <dt>Issuer</dt>
                    <dd>{c.issuer}</dd>
                    <dt>Owner confirmed</dt>
                    <dd>{c.owner_confirmed ? "yes" : "no: unusable until an Owner confirms"}</dd>
                  </>
                )}
              </dl>
              <div className="row start">
                {c.provider === "generic_oidc" && !c.owner_confirmed && (
                  <button
                    type="button"
                    disabled={props.workspace.role !== "owner"}
                    onClick={() =>
                      void act(() =>
                        call(`/v1/connections/${c.id}`, { method: "PATCH", body: { owner_confirmed: true } }),
                      )
                    }
                  >
                    Confirm as Owner
                  </button>
                )}
                <ConfirmButton
                  label="Delete connection"
                  question={`Delete the ${c.provider} connection? Its users can no longer sign in with it.`}
                  onConfirm={() => act(() => call(`/v1/connections/${c.id}`, { method: "DELETE" }))}
                />
              </div>
            </Section>
          ))}
          <Section title="Add a connection">
            <form
              onSubmit={form.submit(async (idempotencyKey) => {
                await call("/v1/connections", {
                  method: "POST",
                  idempotencyKey,
                  body: {
                    environment_id: env,
                    provider,
                    mode: "byo",
                    provider_key: providerKey,
                    provider_client_id: clientId,
                    provider_client_secret: clientSecret,
                    ...(provider === "generic_oidc" ? { issuer } : {}),
                  },
                })
                setClientSecret("")
                await load()
              })}
            >
              <FormError message={form.formError} />
              <Select label="Provider" value={provider} options={PROVIDERS} onChange={setProvider} />
              <Field
                label="Key (a name for this connection)"
                name="provider_key"
                value={providerKey}
                onChange={setProviderKey}
                error={form.errors["provider_key"]}
                required
              />
              {provider === "generic_oidc" && (
                <Field
                  label="Issuer URL"
                  name="issuer"
                  value={issuer}
                  onChange={setIssuer}
                  error={form.errors["issuer"]}
                  required
                />
              )}
              <Field
                label="Provider client ID"
                name="provider_client_id"
                value={clientId}
                onChange={setClientId}
                error={form.errors["provider_client_id"]}
                required
              />
              <Field
                label="Provider client secret"
                name="provider_client_secret"
                type="password"
                value={clientSecret}
                onChange={setClientSecret}
                error={form.errors["provider_client_secret"]}
                required
              />
              <button type="submit" className="primary" disabled={form.busy}>
                Add connection
              </button>
            </form>
          </Section>
        </>
      )}
    </>
  )
}
