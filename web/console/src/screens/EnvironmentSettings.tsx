import { useCallback, useEffect, useState } from "react"
import { ApiProblem, call } from "../api.js"
import type { ApiAnswer, Environment } from "../api/types.js"
import { ConfirmButton, Field, FormError, Section, Select, describe, useApiForm } from "../ui.js"
import { EnvironmentPicker } from "./EnvironmentPicker.js"

type Theme = ApiAnswer<"/v1/environments/{environmentId}/theme", "get">
type Settings = ApiAnswer<"/v1/environments/{environmentId}/settings", "get">
const FONTS = ["system", "sans-serif", "serif", "monospace"] as const
const FONT_STACKS: Record<Theme["font_family"], string> = {
  system: "system-ui, sans-serif",
  "sans-serif": "Helvetica, Arial, sans-serif",
  serif: "Georgia, serif",
  monospace: "ui-monospace, monospace",
}

/**
 * One Environment's settings: the impersonation switch and sign-up blocking, the Hosted Login
 * theme with a live preview, suspend/resume and delete (confirmed, with the ETag read: 412 if it
 * changed meanwhile).
 */
export function EnvironmentSettings(props: { workspaceId: string }) {
  const [environment, setEnvironment] = useState<Environment | undefined>()
  const [etag, setEtag] = useState<string | undefined>()
  const [settings, setSettings] = useState<Settings | undefined>()
  const [theme, setTheme] = useState<Theme | undefined>()
  // PUT theme requires If-Match: a 412 means someone saved another theme meanwhile.
  const [themeEtag, setThemeEtag] = useState<string | undefined>()
  const [error, setError] = useState<string | undefined>()
  const themeForm = useApiForm([
    "primary_color",
    "background_color",
    "text_color",
    "border_radius",
    "font_family",
    "logo_url",
  ])
  const env = environment?.id

  const load = useCallback(async () => {
    if (env === undefined) return
    const current = await call<Environment>(`/v1/environments/${env}`)
    setEnvironment(current.body)
    setEtag(current.etag)
    setSettings((await call<Settings>(`/v1/environments/${env}/settings`)).body)
    const currentTheme = await call<Theme>(`/v1/environments/${env}/theme`)
    setTheme(currentTheme.body)
    setThemeEtag(currentTheme.etag)
  }, [env])
  useEffect(() => {
    void load()
  }, [load])
  // A switch updates the settings from the answer alone: a reload would drop a theme being edited.
  const setSetting = async (change: Partial<Settings>) => {
    setError(undefined)
    try {
      setSettings((await call<Settings>(`/v1/environments/${env}/settings`, { method: "PATCH", body: change })).body)
    } catch (e) {
      setError(e instanceof ApiProblem ? describe(e) : String(e))
    }
  }
  const act = async (action: () => Promise<unknown>) => {
    setError(undefined)
    try {
      await action()
      await load()
    } catch (e) {
      setError(e instanceof ApiProblem ? describe(e) : String(e))
      // A stale ETag: show what the other change left, so the next attempt sends its ETag.
      if (e instanceof ApiProblem && e.status === 412) await load()
    }
  }

  return (
    <>
      <h1>Environment settings</h1>
      <EnvironmentPicker
        workspaceId={props.workspaceId}
        value={env}
        onChange={(e) => {
          setEnvironment(e)
          setSettings(undefined)
          setTheme(undefined)
        }}
      />
      <FormError message={error} />
      {environment && settings && (
        <Section title="Settings">
          <dl className="facts">
            <dt>Status</dt>
            <dd>{environment.status}</dd>
            <dt>Issuer</dt>
            <dd>
              <code>{environment.issuer}</code>
            </dd>
          </dl>
          <label className="check">
            <input
              type="checkbox"
              checked={settings.impersonation_enabled}
              onChange={(e) => void setSetting({ impersonation_enabled: e.target.checked })}
            />{" "}
            Impersonation allowed
          </label>
          <label className="check">
            <input
              type="checkbox"
              checked={settings.new_user_creation_blocked}
              onChange={(e) => void setSetting({ new_user_creation_blocked: e.target.checked })}
            />{" "}
            Block sign-ups of new users
          </label>
          <div className="row start">
            {environment.status === "active" && (
              <ConfirmButton
                label="Suspend"
                question={`Suspend ${environment.name}? Its sign-in and tokens stop working until resumed.`}
                onConfirm={() =>
                  act(() =>
                    call(`/v1/environments/${env}`, { method: "PATCH", ifMatch: etag, body: { status: "suspended" } }),
                  )
                }
              />
            )}
            {environment.status === "suspended" && (
              <button
                type="button"
                onClick={() =>
                  void act(() =>
                    call(`/v1/environments/${env}`, { method: "PATCH", ifMatch: etag, body: { status: "active" } }),
                  )
                }
              >
                Resume
              </button>
            )}
            <ConfirmButton
              label="Delete environment"
              question={`Delete ${environment.name}? Its users, clients and keys stop working for good.`}
              onConfirm={() =>
                act(async () => {
                  await call(`/v1/environments/${env}`, { method: "DELETE", ifMatch: etag })
                  setEnvironment(undefined)
                })
              }
            />
          </div>
        </Section>
      )}
      {theme && (
        <Section title="Theme">
          <div className="columns">
            <form
              onSubmit={themeForm.submit(async () => {
                const { primary_color, background_color, text_color, border_radius, font_family, logo_url } = theme
                const saved = await call<Theme>(`/v1/environments/${env}/theme`, {
                  method: "PUT",
                  ifMatch: themeEtag,
                  body: { primary_color, background_color, text_color, border_radius, font_family, logo_url },
                }).catch(async (e: unknown) => {
                  if (e instanceof ApiProblem && e.status === 412) await load()
                  throw e
                })
                setTheme(saved.body)
                setThemeEtag(saved.etag)
              })}
            >
              <FormError message={themeForm.formError} />
              <Field
                label="Primary colour"
                name="primary_color"
                value={theme.primary_color}
                onChange={(v) => setTheme({ ...theme, primary_color: v })}
                error={themeForm.errors["primary_color"]}
              />
              <Field
                label="Background colour"
                name="background_color"
                value={theme.background_color}
                onChange={(v) => setTheme({ ...theme, background_color: v })}
                error={themeForm.errors["background_color"]}
              />
              <Field
                label="Text colour"
                name="text_color"
                value={theme.text_color}
                onChange={(v) => setTheme({ ...theme, text_color: v })}
                error={themeForm.errors["text_color"]}
              />
              <Field
                label="Corner radius (px)"
                name="border_radius"
                type="number"
                value={String(theme.border_radius)}
                onChange={(v) => setTheme({ ...theme, border_radius: Number(v) })}
                error={themeForm.errors["border_radius"]}
              />
              <Select
                label="Font"
                value={theme.font_family}
                options={FONTS}
                onChange={(v) => setTheme({ ...theme, font_family: v })}
              />
              <button type="submit" className="primary" disabled={themeForm.busy}>
                Save theme
              </button>
            </form>
            {/* The preview follows the form as you type; styles are set through the DOM, which the CSP allows. */}
            <figure
              className="preview"
              aria-label="Hosted Login preview"
              style={{
                background: theme.background_color,
                color: theme.text_color,
                fontFamily: FONT_STACKS[theme.font_family],
                borderRadius: theme.border_radius,
              }}
            >
              <p className="preview-title">Sign in</p>
              <p>Email address</p>
              <div className="preview-input" style={{ borderRadius: theme.border_radius }}>
                you@example.com
              </div>
              <div
                className="preview-button"
                style={{ background: theme.primary_color, borderRadius: theme.border_radius }}
              >
                Continue with email
              </div>
            </figure>
          </div>
        </Section>
      )}
    </>
  )
}
