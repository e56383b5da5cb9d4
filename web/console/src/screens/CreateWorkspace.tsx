import { useState } from "react"
import { call } from "../api.js"
import type { Workspace } from "../api/types.js"
import { Field, FormError, useApiForm } from "../ui.js"

export function CreateWorkspace(props: { first: boolean; onCreated: (id: string) => Promise<void> }) {
  const [name, setName] = useState("")
  const [slug, setSlug] = useState("")
  const form = useApiForm(["name", "slug"])
  return (
    <section aria-label="Create Workspace">
      <h1>Create a Workspace</h1>
      {props.first && <p>You are not a member of any Workspace yet. Create one: you will be its Owner.</p>}
      <form
        onSubmit={form.submit(async (idempotencyKey) => {
          const created = await call<Workspace>("/v1/workspaces", {
            method: "POST",
            workspace: null,
            idempotencyKey,
            body: { name, ...(slug === "" ? {} : { slug }) },
          })
          await props.onCreated(created.body.id)
        })}
      >
        <FormError message={form.formError} />
        <Field label="Name" name="name" value={name} onChange={setName} error={form.errors["name"]} required />
        <Field
          label="Slug (optional)"
          name="slug"
          value={slug}
          onChange={setSlug}
          error={form.errors["slug"]}
          hint="lower-case letters, digits and hyphens"
        />
        <button type="submit" className="primary" disabled={form.busy}>
          Create Workspace
        </button>
      </form>
    </section>
  )
}
