import { useEffect, useState } from "react"
import { ApiProblem, call, list } from "../api.js"
import type { ApiAnswer, Environment } from "../api/types.js"
import { Field, FormError, Section, Select, describe, useApiForm } from "../ui.js"
import { EnvironmentPicker } from "./EnvironmentPicker.js"

type ImportJob = ApiAnswer<"/v1/user-import-jobs/{jobId}", "get">
interface RowError {
  row: number
  code: string
  message: string
}
const POLL_MS = 1000

/** User import from a JSON or CSV URL, with live progress (polled) and the row errors. */
export function ImportExport(props: { workspaceId: string }) {
  const [environment, setEnvironment] = useState<Environment | undefined>()
  const [format, setFormat] = useState<"csv" | "json">("csv")
  const [source, setSource] = useState("")
  const [job, setJob] = useState<ImportJob | undefined>()
  const [rowErrors, setRowErrors] = useState<ReadonlyArray<RowError>>([])
  const [error, setError] = useState<string | undefined>()
  const form = useApiForm(["source_url", "format"])
  const env = environment?.id

  const show = async (next: ImportJob) => {
    setJob(next)
    if (next.error_count + next.failed_count > 0)
      setRowErrors((await list<RowError>(`/v1/user-import-jobs/${next.id}/errors`, null, 100)).body.data)
  }
  // Live progress: the job is read again every second until it has finished.
  // biome-ignore lint/correctness/useExhaustiveDependencies: show only sets state; a new show each render must not restart the poll
  useEffect(() => {
    if (job === undefined || job.status === "completed" || job.status === "failed") return
    const timer = setTimeout(() => {
      void call<ImportJob>(`/v1/user-import-jobs/${job.id}`).then(
        (a) => show(a.body),
        (e) => setError(e instanceof ApiProblem ? describe(e) : String(e)),
      )
    }, POLL_MS)
    return () => clearTimeout(timer)
  }, [job])

  const done = job === undefined ? 0 : job.imported_count + job.skipped_count + job.failed_count
  return (
    <>
      <h1>Import users</h1>
      <EnvironmentPicker workspaceId={props.workspaceId} value={env} onChange={setEnvironment} />
      <FormError message={error} />
      {env && (
        <Section title="Start an import">
          <form
            onSubmit={form.submit(async (idempotencyKey) => {
              setRowErrors([])
              await show(
                (
                  await call<ImportJob>("/v1/user-import-jobs", {
                    method: "POST",
                    idempotencyKey,
                    body: { environment_id: env, format, source_url: source },
                  })
                ).body,
              )
            })}
          >
            <FormError message={form.formError} />
            <Select label="Format" value={format} options={["csv", "json"] as const} onChange={setFormat} />
            <Field
              label="Source URL"
              name="source_url"
              type="url"
              value={source}
              onChange={setSource}
              error={form.errors["source_url"]}
              required
              placeholder="https://files.example.com/users.csv"
            />
            <button type="submit" className="primary" disabled={form.busy}>
              Start import
            </button>
          </form>
        </Section>
      )}
      {job && (
        <Section title="Import progress">
          <p role="status">
            {job.status}: {done} of {job.total_rows || "?"} rows ({job.imported_count} imported, {job.skipped_count}{" "}
            skipped, {job.failed_count} failed)
          </p>
          <progress max={Math.max(1, job.total_rows)} value={done} aria-label="Rows processed" />
          {job.error && <p className="form-error">{job.error.message}</p>}
          {rowErrors.length > 0 && (
            <table tabIndex={0}>
              <thead>
                <tr>
                  <th scope="col">Row</th>
                  <th scope="col">Problem</th>
                </tr>
              </thead>
              <tbody>
                {rowErrors.map((r) => (
                  <tr key={`${r.row}-${r.code}`}>
                    <td>{r.row}</td>
                    <td>
                      {r.code}: {r.message}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </Section>
      )}
    </>
  )
}
