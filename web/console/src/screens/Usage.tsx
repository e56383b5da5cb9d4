import { useEffect, useState } from "react"
import { ApiProblem, call } from "../api.js"
import type { ApiAnswer, Environment } from "../api/types.js"
import { FormError, Section, describe } from "../ui.js"
import { EnvironmentPicker } from "./EnvironmentPicker.js"

type Mau = ApiAnswer<"/v1/usage/mau", "get">
const MONTHS = 6

/** The last months as YYYY-MM, oldest first (UTC, as billing months are). */
const lastMonths = (n: number) => {
  const now = new Date()
  return Array.from({ length: n }, (_, i) => {
    const d = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - (n - 1 - i), 1))
    return d.toISOString().slice(0, 7)
  })
}

/** MAU per month of one Environment as a bar chart, and the Workspace's billing state (checkout and portal links). */
export function Usage(props: { workspaceId: string }) {
  const [environment, setEnvironment] = useState<Environment | undefined>()
  const [months, setMonths] = useState<ReadonlyArray<Mau>>([])
  const [current, setCurrent] = useState<Mau | undefined>()
  const [error, setError] = useState<string | undefined>()
  const env = environment?.id

  useEffect(() => {
    void call<Mau>(`/v1/usage/mau?workspace_id=${props.workspaceId}`).then(
      (a) => setCurrent(a.body),
      (e) => setError(e instanceof ApiProblem ? describe(e) : String(e)),
    )
  }, [props.workspaceId])
  useEffect(() => {
    if (env === undefined) return setMonths([])
    void Promise.all(
      lastMonths(MONTHS).map((m) =>
        call<Mau>(`/v1/usage/mau?environment_id=${env}&billing_month=${m}`).then((a) => a.body),
      ),
    ).then(setMonths, (e) => setError(e instanceof ApiProblem ? describe(e) : String(e)))
  }, [env])

  const billingLink = async (kind: "checkout" | "portal") => {
    setError(undefined)
    try {
      const back = location.href.startsWith("https:") ? location.href : undefined
      if (back === undefined)
        throw new Error("Billing links need the console to be served over https (the return URLs must be https).")
      const body = kind === "checkout" ? { success_url: back, cancel_url: back } : { return_url: back }
      const answer = await call<{ checkout_url?: string; portal_url?: string }>(`/v1/billing/${kind}-session`, {
        method: "POST",
        body,
      })
      location.assign(answer.body.checkout_url ?? answer.body.portal_url!)
    } catch (e) {
      setError(e instanceof ApiProblem ? describe(e) : e instanceof Error ? e.message : String(e))
    }
  }

  const max = Math.max(1, ...months.map((m) => m.mau))
  const billing = current?.billing.status
  return (
    <>
      <h1>Usage and billing</h1>
      <FormError message={error} />
      {current && (
        <Section title="Billing">
          <dl className="facts">
            <dt>This month</dt>
            <dd>
              {current.workspace_mau} monthly active users of {current.free_tier_limit} free (
              {current.billing_status.replaceAll("_", " ")})
            </dd>
            <dt>Subscription</dt>
            <dd>
              {billing === "not_configured"
                ? "Billing is not configured on this installation."
                : billing?.replaceAll("_", " ")}
            </dd>
          </dl>
          {billing !== undefined && billing !== "not_configured" && (
            <div className="row start">
              {billing === "no_subscription" && (
                <button type="button" className="primary" onClick={() => void billingLink("checkout")}>
                  Subscribe
                </button>
              )}
              {billing !== "no_subscription" && (
                <button type="button" onClick={() => void billingLink("portal")}>
                  Manage billing
                </button>
              )}
            </div>
          )}
        </Section>
      )}
      <EnvironmentPicker workspaceId={props.workspaceId} value={env} onChange={setEnvironment} />
      {env && months.length > 0 && (
        <Section title="Monthly active users">
          <svg
            className="chart"
            viewBox={`0 0 ${MONTHS * 60} 160`}
            role="img"
            aria-label={`Monthly active users: ${months.map((m) => `${m.billing_month} ${m.mau}`).join(", ")}`}
          >
            {months.map((m, i) => {
              const h = Math.round((m.mau / max) * 105)
              return (
                <g key={m.billing_month}>
                  <rect x={i * 60 + 10} y={130 - h} width={40} height={h} className="bar" />
                  <text x={i * 60 + 30} y={125 - h} textAnchor="middle" className="value">
                    {m.mau}
                  </text>
                  <text x={i * 60 + 30} y={150} textAnchor="middle" className="label">
                    {m.billing_month.slice(2)}
                  </text>
                </g>
              )
            })}
          </svg>
        </Section>
      )}
    </>
  )
}
