import { type FormEvent, type ReactNode, useEffect, useId, useRef, useState } from "react"
import { ApiProblem } from "./api.js"

/** A labelled input with the API's complaint about it shown beside it (aria-describedby). */
export function Field(props: {
  label: string
  name: string
  value: string
  onChange: (v: string) => void
  error?: string | undefined
  type?: string
  placeholder?: string
  hint?: string
  required?: boolean
}) {
  const id = useId()
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      <input
        id={id}
        name={props.name}
        type={props.type ?? "text"}
        value={props.value}
        placeholder={props.placeholder}
        required={props.required}
        aria-invalid={props.error !== undefined}
        aria-describedby={props.error !== undefined ? `${id}-error` : props.hint ? `${id}-hint` : undefined}
        onChange={(e) => props.onChange(e.target.value)}
      />
      {props.hint && props.error === undefined && (
        <p id={`${id}-hint`} className="hint">
          {props.hint}
        </p>
      )}
      {props.error !== undefined && (
        <p id={`${id}-error`} className="field-error" role="alert">
          {props.error}
        </p>
      )}
    </div>
  )
}

export function Select<T extends string>(props: {
  label: string
  value: T
  options: ReadonlyArray<T>
  onChange: (v: T) => void
  disabled?: boolean
}) {
  const id = useId()
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      <select
        id={id}
        value={props.value}
        disabled={props.disabled}
        onChange={(e) => props.onChange(e.target.value as T)}
      >
        {props.options.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    </div>
  )
}

/** A set of checkboxes (scopes, event types) with the API's error for the field above them. */
export function CheckboxGroup<T extends string>(props: {
  legend: string
  options: ReadonlyArray<T>
  checked: ReadonlyArray<T>
  onChange: (checked: Array<T>) => void
  error: string | undefined
}) {
  return (
    <fieldset>
      <legend>{props.legend}</legend>
      {props.error && (
        <p className="field-error" role="alert">
          {props.error}
        </p>
      )}
      <div className="checks">
        {props.options.map((o) => (
          <label key={o}>
            <input
              type="checkbox"
              checked={props.checked.includes(o)}
              onChange={(e) =>
                props.onChange(e.target.checked ? [...props.checked, o] : props.checked.filter((x) => x !== o))
              }
            />{" "}
            {o}
          </label>
        ))}
      </div>
    </fieldset>
  )
}

/** Form state for one API write: field errors from Problem Details, the rest above the form. */
export function useApiForm(fields: ReadonlyArray<string>) {
  const [errors, setErrors] = useState<Record<string, string>>({})
  const [formError, setFormError] = useState<string | undefined>()
  const [busy, setBusy] = useState(false)
  // One Idempotency-Key per action: a retry after a network failure reuses it.
  const key = useRef(crypto.randomUUID())
  const submit = (action: (idempotencyKey: string) => Promise<void>) => async (e?: FormEvent) => {
    e?.preventDefault()
    setBusy(true)
    setErrors({})
    setFormError(undefined)
    try {
      await action(key.current)
      key.current = crypto.randomUUID()
    } catch (error) {
      if (error instanceof ApiProblem) {
        const field = error.fieldOf(fields)
        if (field !== undefined) setErrors({ [field]: error.message })
        else setFormError(describe(error))
        // A refusal is final for this request body: a corrected form is a new action.
        if (error.status < 500) key.current = crypto.randomUUID()
      } else setFormError("The server could not be reached; try again (the same request is retried safely).")
    } finally {
      setBusy(false)
    }
  }
  return { errors, formError, busy, submit, setFormError }
}

export const describe = (error: ApiProblem) => {
  // Every write with If-Match reloads what it changed on a 412, so the message can say it was reloaded.
  if (error.status === 412)
    return "Someone changed this meanwhile. It has been reloaded: check it and apply your change again."
  if (error.status === 403) return `Not allowed: ${error.message}`
  return error.message
}

export function FormError({ message }: { message: string | undefined }) {
  return message === undefined ? null : (
    <p className="form-error" role="alert">
      {message}
    </p>
  )
}

/** A destructive action: asks first, in a modal dialog that keeps keyboard focus. */
export function ConfirmButton(props: {
  label: string
  question: string
  confirmLabel?: string
  onConfirm: () => Promise<void> | void
  disabled?: boolean
}) {
  const [open, setOpen] = useState(false)
  const dialog = useRef<HTMLDialogElement>(null)
  useEffect(() => {
    if (open) dialog.current?.showModal()
    else dialog.current?.close()
  }, [open])
  return (
    <>
      <button type="button" className="danger" disabled={props.disabled} onClick={() => setOpen(true)}>
        {props.label}
      </button>
      <dialog ref={dialog} onClose={() => setOpen(false)} aria-label={props.question}>
        <p>{props.question}</p>
        <div className="row">
          <button type="button" onClick={() => setOpen(false)}>
            Cancel
          </button>
          <button
            type="button"
            className="danger"
            onClick={async () => {
              setOpen(false)
              await props.onConfirm()
            }}
          >
            {props.confirmLabel ?? props.label}
          </button>
        </div>
      </dialog>
    </>
  )
}

/** A secret shown once, with a copy button. */
export function ShownOnce({ label, value }: { label: string; value: string }) {
  return (
    <div className="once" role="status">
      <p>
        <strong>{label}</strong> (shown only now: copy it to a safe place)
      </p>
      <code className="secret">{value}</code>
      <button type="button" onClick={() => void navigator.clipboard?.writeText(value)}>
        Copy
      </button>
    </div>
  )
}

export function Section(props: { title: string; children: ReactNode }) {
  return (
    <section aria-label={props.title}>
      <h2>{props.title}</h2>
      {props.children}
    </section>
  )
}

/** Keyset paging: the API's next_cursor, and the cursors already visited to go back. */
export function Pager(props: {
  hasPrevious: boolean
  nextCursor: string | null
  onPrevious: () => void
  onNext: () => void
}) {
  return (
    <nav className="pager" aria-label="Pages">
      <button type="button" disabled={!props.hasPrevious} onClick={props.onPrevious}>
        Previous
      </button>
      <button type="button" disabled={props.nextCursor === null} onClick={props.onNext}>
        Next
      </button>
    </nav>
  )
}
