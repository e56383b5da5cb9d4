import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, startApp, type TestApp } from "../../support/app.js"
import { expectProblem } from "../support/problem.js"
import { below, etagOf, RESOURCE_KINDS, type ResourceKind } from "./resource-kinds.js"

// Spec, Management common rule 3: "Single-resource updates and deletes that return an ETag
// accept If-Match; mismatch gives 412 precondition_failed. Theme PUT uses If-Match." Checked
// for every resource kind and every single-resource write, over HTTP.

let app: TestApp
let b: Bootstrapped
beforeAll(async () => {
  app = await startApp()
  b = await app.bootstrap()
})
afterAll(async () => {
  await app?.close()
})

type Write = {
  readonly method: "PATCH" | "POST" | "DELETE"
  readonly path: string
  readonly body?: unknown
  readonly label: string
}

const writesOf = (kind: ResourceKind, path: string): ReadonlyArray<Write> => [
  { method: kind.update.method, path, body: kind.update.body(1), label: `${kind.update.method} ${kind.name}` },
  ...kind.actions.map((a) => ({
    method: a.method,
    path: below(path, a.suffix),
    ...(a.body !== undefined ? { body: a.body } : {}),
    label: `${a.method} ${kind.name}${a.suffix}`,
  })),
]

const send = (write: Write, ifMatch: string | undefined, key: string | undefined) =>
  app.management(write.path, {
    method: write.method,
    ...(write.body !== undefined ? { body: write.body } : {}),
    ...(key ? { key } : {}),
    headers: ifMatch === undefined ? {} : { "if-match": ifMatch },
  })

/** The resource's current ETag and version from its create (or read) answer. */
const versionOf = (etag: string) => Number(/\.(\d+)"$/.exec(etag)![1])

describe.each(RESOURCE_KINDS)("If-Match: $name", (kind) => {
  it("a stale ETag, or another resource's, is 412 precondition_failed on every single-resource write, and changes nothing", async () => {
    const { created, path, key } = await kind.create(app, b)
    const other = await kind.create(app, b)
    const id = created.json.id as string
    const current = created.headers["etag"] as string
    const version = versionOf(current)
    for (const write of writesOf(kind, path)) {
      for (const wrong of [
        etagOf(id, version + 7),
        etagOf(id, version - 1),
        other.created.headers["etag"] as string,
        `"${id}"`,
      ]) {
        const res = await send(write, wrong, key)
        expect(res.status, `${write.label} with If-Match ${wrong}`).toBe(412)
        expectProblem(res, 412, "precondition_failed")
      }
    }
    // Nothing changed: the ETag from before is still the current one, and the next update moves it by exactly one.
    const updated = await send(writesOf(kind, path)[0]!, current, key)
    expect(updated.status, updated.text).toBe(200)
    expect(updated.headers["etag"]).toBe(etagOf(id, version + 1))
  })

  it("the current ETag is accepted as sent, as a weak tag, in a list, and as *", async () => {
    const { created, path, key } = await kind.create(app, b)
    const id = created.json.id as string
    const version = versionOf(created.headers["etag"] as string)
    const update = (n: number, ifMatch: string) =>
      send({ ...writesOf(kind, path)[0]!, body: kind.update.body(n) }, ifMatch, key)
    const forms = [
      (v: number) => etagOf(id, v),
      (v: number) => `W/${etagOf(id, v)}`,
      (v: number) => `${etagOf(id, v + 5)}, ${etagOf(id, v)}`,
      () => "*",
    ]
    for (const [i, form] of forms.entries()) {
      const res = await update(i + 1, form(version + i))
      expect(res.status, `If-Match ${form(version + i)}: ${res.text}`).toBe(200)
      expect(res.headers["etag"]).toBe(etagOf(id, version + i + 1))
    }
  })

  it("If-Match is optional: without it the write goes ahead", async () => {
    const { created, path, key } = await kind.create(app, b)
    const res = await send(writesOf(kind, path)[0]!, undefined, key)
    expect(res.status, res.text).toBe(200)
    expect(res.headers["etag"]).toBe(etagOf(created.json.id, versionOf(created.headers["etag"] as string) + 1))
  })
})

describe("If-Match on the Theme (PUT /v1/environments/{id}/theme)", () => {
  const themePath = () => `/v1/environments/${b.environment_id}/theme`

  it("is required: without it 428 precondition_required; stale 412 precondition_failed; the current one replaces the theme", async () => {
    const got = await app.management(themePath())
    expect(got.status, got.text).toBe(200)
    const etag = got.headers["etag"] as string
    expect(etag).toBe(`"${b.environment_id}.theme.1"`)
    const body = { primary_color: "#123456" }
    const missing = await app.management(themePath(), { method: "PUT", body })
    expectProblem(missing, 428, "precondition_required")
    expectProblem(
      await app.management(themePath(), {
        method: "PUT",
        body,
        headers: { "if-match": `"${b.environment_id}.theme.0"` },
      }),
      412,
      "precondition_failed",
    )
    expect((await app.management(themePath())).headers["etag"]).toBe(etag)
    const replaced = await app.management(themePath(), { method: "PUT", body, headers: { "if-match": etag } })
    expect(replaced.status, replaced.text).toBe(200)
    expect(replaced.headers["etag"]).not.toBe(etag)
    expectProblem(
      await app.management(themePath(), { method: "PUT", body, headers: { "if-match": etag } }),
      412,
      "precondition_failed",
    )
  })
})
