import { useCallback, useEffect, useState } from "react"
import { ApiProblem, call, list } from "../api.js"
import type { Environment, Item } from "../api/types.js"
import { ConfirmButton, Field, FormError, Section, describe, useApiForm } from "../ui.js"
import { EnvironmentPicker } from "./EnvironmentPicker.js"

type Domain = Item<"/v1/domains">

/** Custom domains of an Environment: add, the TXT record to create, retry validation, status, delete. */
export function Domains(props: { workspaceId: string }) {
  const [environment, setEnvironment] = useState<Environment | undefined>()
  const [domains, setDomains] = useState<ReadonlyArray<Domain>>([])
  const [hostname, setHostname] = useState("")
  const [error, setError] = useState<string | undefined>()
  const form = useApiForm(["hostname"])
  const env = environment?.id
  const load = useCallback(async () => {
    if (env !== undefined) setDomains((await list<Domain>(`/v1/domains?environment_id=${env}`, null, 100)).body.data)
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
      <h1>Domains</h1>
      <EnvironmentPicker workspaceId={props.workspaceId} value={env} onChange={setEnvironment} />
      <FormError message={error} />
      {env && (
        <>
          {domains.map((d) => (
            <Section key={d.id} title={d.hostname}>
              <dl className="facts">
                <dt>Status</dt>
                <dd>{d.status}</dd>
                <dt>TXT record name</dt>
                <dd>
                  <code>{d.verification.name}</code>
                </dd>
                <dt>TXT record value</dt>
                <dd>
                  <code>{d.verification.value}</code>
                </dd>
                {d.validation_errors.length > 0 && (
                  <>
                    <dt>Last check</dt>
                    <dd>{d.validation_errors.join("; ")}</dd>
                  </>
                )}
              </dl>
              <div className="row start">
                <button
                  type="button"
                  onClick={() =>
                    void act(() => call(`/v1/domains/${d.id}/retry-validation`, { method: "POST", body: {} }))
                  }
                >
                  Retry validation
                </button>
                <ConfirmButton
                  label="Delete domain"
                  question={`Delete ${d.hostname}? Sign-in pages stop answering on it.`}
                  onConfirm={() => act(() => call(`/v1/domains/${d.id}`, { method: "DELETE" }))}
                />
              </div>
            </Section>
          ))}
          <Section title="Add a domain">
            <form
              onSubmit={form.submit(async (idempotencyKey) => {
                await call("/v1/domains", { method: "POST", idempotencyKey, body: { environment_id: env, hostname } })
                setHostname("")
                await load()
              })}
            >
              <FormError message={form.formError} />
              <Field
                label="Hostname"
                name="hostname"
                value={hostname}
                onChange={setHostname}
                error={form.errors["hostname"]}
                required
                placeholder="login.example.com"
              />
              <button type="submit" className="primary" disabled={form.busy}>
                Add domain
              </button>
            </form>
          </Section>
        </>
      )}
    </>
  )
}
