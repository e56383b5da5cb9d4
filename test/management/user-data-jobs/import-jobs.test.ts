import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../../support/app.js"
import { startFileServer } from "./file-server.js"
import { makeEnvironment, makeKey } from "../support/callers.js"
import { query } from "../support/db.js"
import { expectProblem } from "../support/problem.js"
import { workspaceAuditRows } from "../support/records.js"

// POST /v1/user-import-jobs and its GET routes (spec: Management API, "Import / export jobs";
// States "Import/export job": the fetch runs inside the request). This app runs with
// WEBHOOK_ALLOW_PRIVATE_TARGETS so a local receiver can serve the files over http; the
// production URL rules are tested in import-source-policy.test.ts.

let app: TestApp
let b: Bootstrapped
let files: Awaited<ReturnType<typeof startFileServer>>
beforeAll(async () => {
  app = await startApp({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" } })
  b = await app.bootstrap()
  files = await startFileServer()
})
afterAll(async () => {
  await files?.close()
  await app?.close()
})

let counter = 0
const unique = (label: string) => `${label}.${++counter}.${Date.now().toString(36)}@example.com`

const startImport = (body: Record<string, unknown>, options: { key?: string; headers?: Record<string, string> } = {}) =>
  app.management("/v1/user-import-jobs", { method: "POST", body, ...options })

const usersOf = (environmentId: string) =>
  query<{
    email: string
    email_verified: boolean
    name: string | null
    locale: string | null
    timezone: string | null
    metadata: any
  }>(
    app,
    `select email, email_verified, name, locale, timezone, metadata from users where environment_id = $1 order by created_at, id`,
    [environmentId],
  )

const counts = async (environmentId: string) =>
  (
    await query<{ users: number; jobs: number; events: number }>(
      app,
      `select
    (select count(*)::int from users where environment_id = $1) as users,
    (select count(*)::int from user_import_jobs where environment_id = $1) as jobs,
    (select count(*)::int from event_outbox where environment_id = $1) as events`,
      [environmentId],
    )
  )[0]!

describe("JSON import", () => {
  it("creates the users during the request, skips duplicates and refuses invalid rows with per-row errors", async () => {
    const w = await app.bootstrap()
    const existing = unique("existing")
    expect(
      (
        await app.management(`/v1/users?environment_id=${w.environment_id}`, {
          method: "POST",
          body: { email: existing },
          key: w.api_key,
        })
      ).status,
    ).toBe(201)
    const ada = unique("ada")
    const grace = unique("grace")
    const url = files.serve("/import-1.json", {
      headers: { "content-type": "application/json" },
      body: JSON.stringify([
        {
          email: ada,
          email_verified: true,
          name: "Ada Lovelace",
          locale: "en-gb",
          timezone: "europe/london",
          metadata: { plan: "pro" },
        },
        { email: grace },
        { email: "not-an-email" },
        { email: existing.toUpperCase() },
        { name: "No email" },
        { email: ada.toUpperCase() },
        { email: unique("extra"), role: "admin" },
        "just a string",
        { email: unique("bad-locale"), locale: "not a locale!" },
      ]),
    })
    const res = await startImport(
      { environment_id: w.environment_id, format: "json", source_url: url },
      { key: w.api_key },
    )
    expect(res.status).toBe(201)
    expect(res.headers["x-request-id"]).toMatch(/^req_/)
    expect(res.json).toEqual({
      id: expect.stringMatching(/^job_[a-z2-7]{32}$/),
      environment_id: w.environment_id,
      format: "json",
      source_url: url,
      status: "completed",
      total_rows: 9,
      imported_count: 2,
      skipped_count: 2,
      failed_count: 5,
      error_count: 7,
      error: null,
      created_at: expect.any(String),
      started_at: expect.any(String),
      completed_at: expect.any(String),
    })
    expect(res.headers["location"]).toBe(`/v1/user-import-jobs/${res.json.id}`)

    const users = await usersOf(w.environment_id)
    expect(users.map((u) => u.email).sort()).toEqual([ada, existing, grace].sort())
    expect(users.find((u) => u.email === ada)).toMatchObject({
      email_verified: true,
      name: "Ada Lovelace",
      locale: "en-GB",
      timezone: "Europe/London",
      metadata: { plan: "pro" },
    })
    expect(users.find((u) => u.email === grace)).toMatchObject({ email_verified: false, name: null })

    const got = await app.management(`/v1/user-import-jobs/${res.json.id}`, { key: w.api_key })
    expect(got.status).toBe(200)
    expect(got.json).toEqual(res.json)

    const errors = await app.management(`/v1/user-import-jobs/${res.json.id}/errors`, { key: w.api_key })
    expect(errors.status).toBe(200)
    expect(errors.json.next_cursor).toBeNull()
    expect(errors.json.data.map((e: any) => [e.row, e.code, e.field])).toEqual([
      [3, "invalid_field", "email"],
      [4, "email_already_registered", "email"],
      [5, "missing_email", "email"],
      [6, "duplicate_in_file", "email"],
      [7, "unknown_field", "role"],
      [8, "invalid_row", null],
      [9, "invalid_field", "locale"],
    ])
    for (const e of errors.json.data) expect(e.message).toEqual(expect.any(String))
    // JSON rows have no line.
    for (const e of errors.json.data) expect(e.line).toBeNull()
    // No full email address in row errors.
    expect(errors.text).not.toContain("@example.com")
  })

  it("each created user emits user.created (method email_otp, actor the API key); one audit record for the job", async () => {
    const w = await app.bootstrap()
    const url = files.serve("/import-events.json", {
      body: JSON.stringify({ users: [{ email: unique("e1") }, { email: unique("e2") }] }),
    })
    const res = await startImport(
      { environment_id: w.environment_id, format: "json", source_url: url },
      { key: w.api_key },
    )
    expect(res.json).toMatchObject({ status: "completed", total_rows: 2, imported_count: 2 })
    const events = await query<{ envelope: any }>(
      app,
      `select envelope from event_outbox where environment_id = $1 and type = 'user.created' order by seq`,
      [w.environment_id],
    )
    expect(events).toHaveLength(2)
    const [keyRow] = await query<{ id: string }>(app, `select id from api_keys where workspace_id = $1`, [
      w.workspace_id,
    ])
    for (const { envelope } of events) {
      expect(envelope.payload).toEqual({
        userId: expect.stringMatching(/^usr_/),
        method: "email_otp",
        maskedEmail: expect.stringContaining("***@"),
      })
      expect(envelope.actor).toEqual({ type: "api_key", id: keyRow!.id })
    }
    const audits = await workspaceAuditRows(app, w.workspace_id, "user_import_job.created")
    expect(audits).toHaveLength(1)
    expect(audits[0]).toMatchObject({
      actor_type: "api_key",
      environment_id: w.environment_id,
      subject_type: "user_import_job",
      subject_id: res.json.id,
      result: "success",
      details: {
        format: "json",
        status: "completed",
        total_rows: 2,
        imported_count: 2,
        skipped_count: 0,
        failed_count: 0,
      },
      request_id: res.headers["x-request-id"],
    })
  })

  it("an active user.created subscription gets one fan-out job per imported user (batched enqueue, same job key as Events.emit)", async () => {
    const w = await app.bootstrap()
    const hook = await app.management("/v1/webhooks", {
      method: "POST",
      key: w.api_key,
      body: {
        environment_id: w.environment_id,
        url: `http://127.0.0.1:${files.port}/hook`,
        event_types: ["user.created"],
      },
    })
    expect(hook.status).toBe(201)
    const url = files.serve("/import-fanout.json", {
      body: JSON.stringify([{ email: unique("f1") }, { email: unique("f2") }, { email: "bad" }]),
    })
    const res = await startImport(
      { environment_id: w.environment_id, format: "json", source_url: url },
      { key: w.api_key },
    )
    expect(res.json).toMatchObject({ status: "completed", imported_count: 2, failed_count: 1 })
    const events = await query<{ id: string }>(
      app,
      `select id from event_outbox where environment_id = $1 and type = 'user.created' order by id`,
      [w.environment_id],
    )
    expect(events).toHaveLength(2)
    const jobs = await query<{ key: string }>(
      app,
      `select key from graphile_worker.jobs where key = any($1::text[]) order by key`,
      [events.map((e) => `webhooks.fanout:${e.id}`)],
    )
    expect(jobs.map((j) => j.key)).toEqual(events.map((e) => `webhooks.fanout:${e.id}`))
  })

  it("errors are paginated by row (limit, cursor)", async () => {
    const w = await app.bootstrap()
    const url = files.serve("/import-page.json", {
      body: JSON.stringify(Array.from({ length: 7 }, () => ({ email: "bad" }))),
    })
    const job = (
      await startImport({ environment_id: w.environment_id, format: "json", source_url: url }, { key: w.api_key })
    ).json
    expect(job).toMatchObject({ total_rows: 7, failed_count: 7, imported_count: 0 })
    const rows: Array<number> = []
    let cursor: string | null = null
    do {
      const page: any = await app.management(
        `/v1/user-import-jobs/${job.id}/errors?limit=3${cursor ? `&cursor=${cursor}` : ""}`,
        { key: w.api_key },
      )
      expect(page.status).toBe(200)
      expect(page.json.data.length).toBeLessThanOrEqual(3)
      rows.push(...page.json.data.map((e: any) => e.row))
      cursor = page.json.next_cursor
    } while (cursor !== null)
    expect(rows).toEqual([1, 2, 3, 4, 5, 6, 7])
    expectProblem(
      await app.management(`/v1/user-import-jobs/${job.id}/errors?limit=0`, { key: w.api_key }),
      400,
      "invalid_request",
    )
    expectProblem(
      await app.management(`/v1/user-import-jobs/${job.id}/errors?limit=101`, { key: w.api_key }),
      400,
      "invalid_request",
    )
    expectProblem(
      await app.management(`/v1/user-import-jobs/${job.id}/errors?cursor=${Buffer.from("x").toString("base64url")}`, {
        key: w.api_key,
      }),
      400,
      "invalid_request",
    )
  })
})

describe("CSV import", () => {
  it("reads a header row and RFC 4180 records (quotes, commas, CRLF, BOM)", async () => {
    const w = await app.bootstrap()
    const one = unique("csv-one")
    const two = unique("csv-two")
    const csv =
      "\uFEFFemail,name,email_verified,metadata,locale\r\n" +
      `${one},"Lovelace, Ada",true,"{""team"":""core""}",fr-fr\r\n` +
      `${two},,0,,\r\n` +
      "\r\n" +
      `${unique("short")},only two\r\n` +
      `bad-email,Someone,false,,\r\n` +
      `${unique("verified")},X,maybe,,\r\n`
    const url = files.serve("/import.csv", { headers: { "content-type": "text/csv" }, body: csv })
    const res = await startImport(
      { environment_id: w.environment_id, format: "csv", source_url: url },
      { key: w.api_key },
    )
    expect(res.status).toBe(201)
    expect(res.json).toMatchObject({
      status: "completed",
      format: "csv",
      total_rows: 5,
      imported_count: 2,
      skipped_count: 0,
      failed_count: 3,
    })
    const users = await usersOf(w.environment_id)
    expect([...users].sort((x, y) => x.email.localeCompare(y.email))).toEqual([
      {
        email: one,
        email_verified: true,
        name: "Lovelace, Ada",
        locale: "fr-FR",
        timezone: null,
        metadata: { team: "core" },
      },
      { email: two, email_verified: false, name: null, locale: null, timezone: null, metadata: {} },
    ])
    const errors = (await app.management(`/v1/user-import-jobs/${res.json.id}/errors`, { key: w.api_key })).json.data
    // line: the CSV line as csv-parse counts it (header line 1; the blank line 4 counts).
    expect(errors.map((e: any) => [e.row, e.line, e.code, e.field])).toEqual([
      [3, 5, "invalid_row", null],
      [4, 6, "invalid_field", "email"],
      [5, 7, "invalid_field", "email_verified"],
    ])
  })
})

describe("a job fails as a whole when the source cannot be used (201, status failed, error)", () => {
  const failedWith = async (
    path: string,
    served: Parameters<typeof files.serve>[1] | undefined,
    format: "json" | "csv",
    code: string,
  ) => {
    const w = await app.bootstrap()
    const url = served ? files.serve(path, served) : `http://127.0.0.1:${files.port}${path}`
    const res = await startImport({ environment_id: w.environment_id, format, source_url: url }, { key: w.api_key })
    expect(res.status).toBe(201)
    expect(res.json).toMatchObject({
      status: "failed",
      total_rows: 0,
      imported_count: 0,
      error: { code, message: expect.any(String) },
    })
    expect((await counts(w.environment_id)).users).toBe(0)
    expect((await app.management(`/v1/user-import-jobs/${res.json.id}`, { key: w.api_key })).json.status).toBe("failed")
    const audits = await workspaceAuditRows(app, w.workspace_id, "user_import_job.created")
    expect(audits[0]).toMatchObject({ result: "failure", details: { status: "failed", failure_code: code } })
    return res.json
  }

  it("HTTP error from the source", () => failedWith("/missing.json", undefined, "json", "source_http_error"))
  it("a redirect is not followed", async () => {
    files.serve("/target.json", { body: JSON.stringify([{ email: unique("redirected") }]) })
    await failedWith(
      "/redirect.json",
      { status: 302, headers: { location: "/target.json" } },
      "json",
      "source_http_error",
    )
    expect(files.hits).not.toContain("/target.json")
  })
  it("not JSON", () => failedWith("/broken.json", { body: '[{"email": ' }, "json", "invalid_source"))
  it("JSON of the wrong shape", () =>
    failedWith("/object.json", { body: JSON.stringify({ people: [] }) }, "json", "invalid_source"))
  it("not UTF-8", () =>
    failedWith(
      "/latin1.csv",
      { body: Buffer.from([0x65, 0x6d, 0x61, 0x69, 0x6c, 0x0a, 0xe9, 0xff]) },
      "csv",
      "invalid_source",
    ))
  it("unknown CSV column", () =>
    failedWith("/columns.csv", { body: "email,password\na@example.com,x\n" }, "csv", "invalid_source"))
  it("CSV without an email column", () => failedWith("/noemail.csv", { body: "name\nAda\n" }, "csv", "invalid_source"))
  it("unterminated CSV quote", () =>
    failedWith("/quote.csv", { body: 'email,name\na@example.com,"Ada\n' }, "csv", "invalid_source"))
  it("more than 10,000 rows", () =>
    failedWith(
      "/many.json",
      { body: JSON.stringify(Array.from({ length: 10_001 }, (_, i) => ({ email: `u${i}@example.com` }))) },
      "json",
      "too_many_rows",
    ))
  it("more than 10 MiB", () =>
    failedWith("/huge.json", { body: Buffer.alloc(10 * 1024 * 1024 + 1, 32) }, "json", "source_too_large"))
  it("more than 10 MiB without a content-length", async () => {
    // Chunked: the limit holds while reading, not only on the declared length.
    const w = await app.bootstrap()
    const { createServer } = await import("node:http")
    const server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" })
      const chunk = Buffer.alloc(1024 * 1024, 32)
      let sent = 0
      const pump = () => {
        while (sent < 12 && !res.destroyed) {
          sent++
          if (!res.write(chunk)) return res.once("drain", pump)
        }
        res.end()
      }
      pump()
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const port = (server.address() as { port: number }).port
    const res = await startImport(
      { environment_id: w.environment_id, format: "json", source_url: `http://127.0.0.1:${port}/stream.json` },
      { key: w.api_key },
    )
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
    expect(res.json).toMatchObject({ status: "failed", error: { code: "source_too_large" } })
  })
  it("connection refused", async () => {
    const w = await app.bootstrap()
    const res = await startImport(
      { environment_id: w.environment_id, format: "json", source_url: "http://127.0.0.1:1/users.json" },
      { key: w.api_key },
    )
    expect(res.json).toMatchObject({ status: "failed", error: { code: "source_unreachable" } })
  })
})

describe("POST /user-import-jobs refusals (exact status and code, nothing created)", () => {
  const cases: Array<[string, unknown, number, string]> = [
    ["missing format", { source_url: "https://files.example.com/u.json" }, 400, "invalid_request_body"],
    ["unknown format", { format: "xml", source_url: "https://files.example.com/u.json" }, 400, "invalid_request_body"],
    ["missing source_url", { format: "json" }, 400, "invalid_request_body"],
    ["source_url not a string", { format: "json", source_url: 42 }, 400, "invalid_request_body"],
    [
      "unknown field",
      { format: "json", source_url: "https://files.example.com/u.json", dry_run: true },
      400,
      "invalid_request_body",
    ],
    ["source_url not a URL", { format: "json", source_url: "not a url" }, 400, "invalid_request"],
    [
      "source_url with a fragment",
      { format: "json", source_url: "https://files.example.com/u.json#x" },
      400,
      "invalid_request",
    ],
    [
      "source_url with userinfo",
      { format: "json", source_url: "https://u:p@files.example.com/u.json" },
      400,
      "invalid_request",
    ],
    ["source_url ftp", { format: "json", source_url: "ftp://files.example.com/u.json" }, 400, "invalid_request"],
  ]
  for (const [name, body, status, code] of cases) {
    it(name, async () => {
      const before = await counts(b.environment_id)
      const res = await startImport({ environment_id: b.environment_id, ...(body as object) })
      expectProblem(res, status, code)
      expect(await counts(b.environment_id)).toEqual(before)
    })
  }

  it("missing environment_id is 400; an unknown or foreign Environment is 404", async () => {
    expectProblem(
      await startImport({ format: "json", source_url: "https://files.example.com/u.json" }),
      400,
      "invalid_request_body",
    )
    const other = await app.bootstrap()
    expectProblem(
      await startImport({
        environment_id: other.environment_id,
        format: "json",
        source_url: files.serve("/iso.json", { body: "[]" }),
      }),
      404,
      "not_found",
    )
    expectProblem(
      await startImport({ environment_id: "env_nope", format: "json", source_url: "https://files.example.com/u.json" }),
      404,
      "not_found",
    )
    expect(files.hits).not.toContain("/iso.json")
  })

  it("workspace_id must match the authenticated Workspace", async () => {
    const other = await app.bootstrap()
    const res = await startImport({
      environment_id: b.environment_id,
      workspace_id: other.workspace_id,
      format: "json",
      source_url: "https://files.example.com/u.json",
    })
    expectProblem(res, 400, "invalid_request")
    expect(res.json.detail).toContain("X-Workspace-Id")
  })

  it("scopes: user_data_jobs:write to create, :read to read (a :write key cannot read)", async () => {
    const reader = await makeKey(app, { workspaceId: b.workspace_id, scopes: ["user_data_jobs:read"] })
    const writer = await makeKey(app, { workspaceId: b.workspace_id, scopes: ["user_data_jobs:write"] })
    const url = files.serve("/scopes.json", { body: "[]" })
    expectProblem(
      await startImport({ environment_id: b.environment_id, format: "json", source_url: url }, { key: reader }),
      403,
      "insufficient_scope",
    )
    const job = await startImport(
      { environment_id: b.environment_id, format: "json", source_url: url },
      { key: writer },
    )
    expect(job.status).toBe(201)
    expect(job.json).toMatchObject({ status: "completed", total_rows: 0 })
    expectProblem(
      await app.management(`/v1/user-import-jobs/${job.json.id}`, { key: writer }),
      403,
      "insufficient_scope",
    )
    expectProblem(
      await app.management(`/v1/user-import-jobs/${job.json.id}/errors`, { key: writer }),
      403,
      "insufficient_scope",
    )
    expect((await app.management(`/v1/user-import-jobs/${job.json.id}`, { key: reader })).status).toBe(200)
    expectProblem(
      await app.request(app.config.managementHost, `/v1/user-import-jobs/${job.json.id}`),
      401,
      "unauthorized",
    )
  })
})

describe("tenant isolation", () => {
  it("another Workspace's job is 404 job_not_found; a pinned key reaches only its Environment's jobs", async () => {
    const w = await app.bootstrap()
    const url = files.serve("/iso-1.json", { body: JSON.stringify([{ email: "bad" }]) })
    const job = (
      await startImport({ environment_id: w.environment_id, format: "json", source_url: url }, { key: w.api_key })
    ).json
    expectProblem(await app.management(`/v1/user-import-jobs/${job.id}`), 404, "job_not_found")
    expectProblem(await app.management(`/v1/user-import-jobs/${job.id}/errors`), 404, "job_not_found")
    expectProblem(
      await app.management(`/v1/user-import-jobs/job_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa`, { key: w.api_key }),
      404,
      "job_not_found",
    )
    const second = await makeEnvironment(app, w.workspace_id, w.project_id)
    const pinnedElsewhere = await makeKey(app, {
      workspaceId: w.workspace_id,
      environmentId: second,
      scopes: ["user_data_jobs:read", "user_data_jobs:write"],
    })
    expectProblem(
      await app.management(`/v1/user-import-jobs/${job.id}`, { key: pinnedElsewhere }),
      404,
      "job_not_found",
    )
    expectProblem(
      await startImport(
        { environment_id: w.environment_id, format: "json", source_url: url },
        { key: pinnedElsewhere },
      ),
      404,
      "not_found",
    )
    const pinnedHere = await makeKey(app, {
      workspaceId: w.workspace_id,
      environmentId: w.environment_id,
      scopes: ["user_data_jobs:read"],
    })
    expect((await app.management(`/v1/user-import-jobs/${job.id}`, { key: pinnedHere })).status).toBe(200)
  })

  it("imports only into the addressed Environment: the same email may exist in another one", async () => {
    const w = await app.bootstrap()
    const email = unique("twice")
    const second = await makeEnvironment(app, w.workspace_id, w.project_id)
    await app.management(`/v1/users?environment_id=${second}`, { method: "POST", body: { email }, key: w.api_key })
    const url = files.serve("/twice.json", { body: JSON.stringify([{ email }]) })
    const res = await startImport(
      { environment_id: w.environment_id, format: "json", source_url: url },
      { key: w.api_key },
    )
    expect(res.json).toMatchObject({ imported_count: 1, skipped_count: 0 })
  })
})

describe("Idempotency-Key", () => {
  it("replays the first job for the same key and body; another body with that key is 409", async () => {
    const w = await app.bootstrap()
    const url = files.serve("/idem.json", { body: JSON.stringify([{ email: unique("idem") }]) })
    const body = { environment_id: w.environment_id, format: "json", source_url: url }
    const first = await startImport(body, { key: w.api_key, headers: { "idempotency-key": "import-1" } })
    const again = await startImport(body, { key: w.api_key, headers: { "idempotency-key": "import-1" } })
    expect(again.status).toBe(201)
    expect(again.headers["idempotent-replayed"]).toBe("true")
    expect(again.json).toEqual(first.json)
    expect((await counts(w.environment_id)).jobs).toBe(1)
    expect((await counts(w.environment_id)).users).toBe(1)
    expectProblem(
      await startImport({ ...body, format: "csv" }, { key: w.api_key, headers: { "idempotency-key": "import-1" } }),
      409,
      "idempotency_key_conflict",
    )
  })

  it("concurrent imports of one file create each user once (unique email per Environment)", async () => {
    const w = await app.bootstrap()
    const emails = Array.from({ length: 20 }, () => unique("race"))
    const url = files.serve("/race.json", { body: JSON.stringify(emails.map((email) => ({ email }))) })
    const results = await Promise.all(
      Array.from({ length: 4 }, () =>
        startImport({ environment_id: w.environment_id, format: "json", source_url: url }, { key: w.api_key }),
      ),
    )
    for (const r of results) expect(r.status).toBe(201)
    expect(results.reduce((n, r) => n + r.json.imported_count, 0)).toBe(20)
    expect(results.reduce((n, r) => n + r.json.skipped_count, 0)).toBe(60)
    expect((await counts(w.environment_id)).users).toBe(20)
  })

  it("concurrent imports of overlapping files in opposite orders neither deadlock nor fail", async () => {
    const w = await app.bootstrap()
    const emails = Array.from({ length: 30 }, () => unique("cross"))
    const forward = files.serve("/forward.json", { body: JSON.stringify(emails.map((email) => ({ email }))) })
    const backward = files.serve("/backward.json", {
      body: JSON.stringify([...emails].reverse().map((email) => ({ email }))),
    })
    const results = await Promise.all(
      [forward, backward, forward, backward].map((url) =>
        startImport({ environment_id: w.environment_id, format: "json", source_url: url }, { key: w.api_key }),
      ),
    )
    expect(results.map((r) => r.status)).toEqual([201, 201, 201, 201])
    expect(results.reduce((n, r) => n + r.json.imported_count, 0)).toBe(30)
    expect((await counts(w.environment_id)).users).toBe(30)
  })
})
