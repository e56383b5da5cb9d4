import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type TestApp, startApp } from "../../support/app.js"
import { query } from "../support/db.js"
import { workspaceAuditRows } from "../support/records.js"

// Large CSV imports (docs/decisions/user-import-export.md): a source too large to import
// inside the request is answered `processing` and streamed by the worker task user_import.run
// in batches. The app runs a real graphile-worker; the source is a local HTTP server that can
// hold the file part-way (progress), drop the connection (a run that dies and resumes) or
// carry a broken byte deep in the file (file-level failure before any user exists).

let app: TestApp
let source: Server
/** What the source server does with the n-th request of a path (1-based); the default serves the whole file. */
type Behaviour = (res: ServerResponse, body: Buffer) => void
const files = new Map<string, { body: Buffer; behaviours: Map<number, Behaviour>; hits: number }>()

beforeAll(async () => {
  app = await startApp({ worker: true, env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" } })
  source = createServer((req: IncomingMessage, res: ServerResponse) => {
    const file = files.get(req.url ?? "")
    if (!file) return res.writeHead(404).end()
    file.hits++
    const behaviour = file.behaviours.get(file.hits)
    res.writeHead(200, { "content-type": "text/csv" })
    if (behaviour) return behaviour(res, file.body)
    res.end(file.body)
  })
  await new Promise<void>((resolve) => source.listen(0, "127.0.0.1", resolve))
}, 120_000)

afterAll(async () => {
  source?.closeAllConnections()
  source?.close()
  await app?.close()
})

const serve = (path: string, body: Buffer, behaviours: Record<number, Behaviour> = {}) => {
  const file = { body, behaviours: new Map(Object.entries(behaviours).map(([n, b]) => [Number(n), b])), hits: 0 }
  files.set(path, file)
  return { url: `http://127.0.0.1:${(source.address() as AddressInfo).port}${path}`, file }
}

/** A CSV of `rows` users (each row about 70 bytes: 20,000 rows are more than the 1 MiB of an in-request import). */
const csvOf = (tag: string, rows: number, edit: (i: number, line: string) => string = (_i, line) => line) => {
  const lines = ["email,name"]
  for (let i = 1; i <= rows; i++)
    lines.push(edit(i, `${tag}-${i}@example.com,Imported user number ${i} of the ${tag} file`))
  return Buffer.from(lines.join("\n") + "\n")
}

const until = async <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 90_000): Promise<T> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

const getJob = async (id: string, key: string) => (await app.management(`/v1/user-import-jobs/${id}`, { key })).json

const finished = (id: string, key: string) =>
  until(`job ${id} to end`, async () => {
    const job = await getJob(id, key)
    return job.status === "completed" || job.status === "failed" ? job : undefined
  })

const allErrors = async (id: string, key: string) => {
  const out: Array<any> = []
  let cursor: string | null = null
  do {
    const page: any = await app.management(
      `/v1/user-import-jobs/${id}/errors?limit=100${cursor ? `&cursor=${cursor}` : ""}`,
      { key },
    )
    out.push(...page.json.data)
    cursor = page.json.next_cursor
  } while (cursor !== null)
  return out
}

const totals = async (environmentId: string) =>
  (
    await query<{ users: number; distinct_emails: number; events: number }>(
      app,
      `select
    (select count(*)::int from users where environment_id = $1) as users,
    (select count(distinct email_normalized)::int from users where environment_id = $1) as distinct_emails,
    (select count(*)::int from event_outbox where environment_id = $1 and type = 'user.created') as events`,
      [environmentId],
    )
  )[0]!

const ROWS = 20_000

describe("a CSV larger than an in-request import", () => {
  it("answers processing, shows progress while the worker streams it, and ends with exact counts and line-numbered errors", async () => {
    const w = await app.bootstrap()
    const existing = await app.management(`/v1/users?environment_id=${w.environment_id}`, {
      method: "POST",
      body: { email: "progress-15000@example.com" },
      key: w.api_key,
    })
    expect(existing.status).toBe(201)
    const body = csvOf("progress", ROWS, (i, line) =>
      i === 5
        ? "not-an-email,Broken row" // line 6
        : i === 10
          ? "progress-2@example.com,Duplicate of row 2" // line 11
          : i === 12
            ? 'progress-12@example.com,"A name over\ntwo lines"' // lines 13-14: csv-parse reports 14
            : i === 20
              ? "progress-20@example.com,one,two" // line 21
              : line,
    )
    let release: () => void = () => {}
    // Request 1: the POST reads the head; 2: the worker's counting pass; 3: the import pass,
    // held after its first 8,000 rows until the test has seen progress.
    const { url, file } = serve("/progress.csv", body, {
      3: (res, all) => {
        const cut = all.indexOf("\nprogress-8001@") + 1
        res.write(all.subarray(0, cut))
        release = () => res.end(all.subarray(cut))
      },
    })
    const res = await app.management("/v1/user-import-jobs", {
      method: "POST",
      body: { environment_id: w.environment_id, format: "csv", source_url: url },
      key: w.api_key,
    })
    expect(res.status).toBe(201)
    expect(res.json).toMatchObject({
      status: "processing",
      format: "csv",
      imported_count: 0,
      completed_at: null,
      error: null,
    })
    expect(
      await query(app, `select 1 from graphile_worker.jobs where key = 'user_import.run:' || $1::text`, [res.json.id]),
    ).toHaveLength(1)

    const during = await until("progress while the source is held", async () => {
      const job = await getJob(res.json.id, w.api_key)
      return job.status === "processing" && job.total_rows === ROWS && job.imported_count >= 3000 ? job : undefined
    })
    expect(during.imported_count + during.skipped_count + during.failed_count).toBeLessThan(ROWS)
    release()

    const job = await finished(res.json.id, w.api_key)
    expect(job).toMatchObject({
      status: "completed",
      total_rows: ROWS,
      imported_count: ROWS - 4,
      skipped_count: 2,
      failed_count: 2,
      error_count: 4,
      error: null,
      completed_at: expect.any(String),
    })
    expect(file.hits).toBe(3)
    const errors = await allErrors(res.json.id, w.api_key)
    expect(errors.map((e) => [e.row, e.line, e.code, e.field])).toEqual([
      [5, 6, "invalid_field", "email"],
      [10, 11, "duplicate_in_file", "email"],
      [20, 22, "invalid_row", null],
      [15000, 15002, "email_already_registered", "email"],
    ])
    // The existing user was created (and announced) by POST /users.
    expect(await totals(w.environment_id)).toEqual({ users: ROWS - 3, distinct_emails: ROWS - 3, events: ROWS - 3 })
    const [user12] = await query<{ name: string }>(
      app,
      `select name from users where environment_id = $1 and email = 'progress-12@example.com'`,
      [w.environment_id],
    )
    expect(user12!.name).toBe("A name over\ntwo lines")
    // One record when the job is created (processing), one when the worker ends it; no source URL secret kept.
    expect(await workspaceAuditRows(app, w.workspace_id, "user_import_job.created")).toEqual([
      expect.objectContaining({ details: expect.objectContaining({ status: "processing" }) }),
    ])
    expect(await workspaceAuditRows(app, w.workspace_id, "user_import_job.finished")).toEqual([
      expect.objectContaining({
        actor_type: "api_key",
        result: "success",
        details: expect.objectContaining({ status: "completed", imported_count: ROWS - 4 }),
      }),
    ])
    const [row] = await query<{ source_url_sealed: string | null; rows_done: number }>(
      app,
      `select source_url_sealed, rows_done from user_import_jobs where id = $1`,
      [res.json.id],
    )
    expect(row).toEqual({ source_url_sealed: null, rows_done: ROWS })
  }, 180_000)

  it("a run whose source drops the connection mid-file is retried and resumes after its committed batches: no user twice", async () => {
    const w = await app.bootstrap()
    let doneWhenRetried: number | undefined
    const { url, file } = serve("/drop.csv", csvOf("drop", ROWS), {
      // The import pass sends 9,000 rows, then the connection breaks.
      3: (res, all) => {
        res.write(all.subarray(0, all.indexOf("\ndrop-9001@") + 1), () => setTimeout(() => res.destroy(), 300))
      },
      // The retried run's counting pass: how far the first run had committed.
      4: (res, all) => {
        void query<{ rows_done: number }>(app, `select rows_done from user_import_jobs where environment_id = $1`, [
          w.environment_id,
        ])
          .then((rows) => {
            doneWhenRetried = rows[0]!.rows_done
          })
          .finally(() => res.end(all))
      },
    })
    const res = await app.management("/v1/user-import-jobs", {
      method: "POST",
      body: { environment_id: w.environment_id, format: "csv", source_url: url },
      key: w.api_key,
    })
    expect(res.json.status).toBe("processing")
    const job = await finished(res.json.id, w.api_key)
    expect(job).toMatchObject({
      status: "completed",
      total_rows: ROWS,
      imported_count: ROWS,
      skipped_count: 0,
      failed_count: 0,
    })
    expect(file.hits).toBe(5)
    expect(doneWhenRetried).toBeGreaterThanOrEqual(1000)
    expect(doneWhenRetried! % 1000).toBe(0)
    expect(await totals(w.environment_id)).toEqual({ users: ROWS, distinct_emails: ROWS, events: ROWS })
    expect(await allErrors(res.json.id, w.api_key)).toEqual([])
    const [row] = await query<{ runs: number }>(app, `select runs from user_import_jobs where id = $1`, [res.json.id])
    expect(row!.runs).toBe(2)
  }, 180_000)

  it("two runs of one job at once (a job handed out twice): each user once, counters exact", async () => {
    const w = await app.bootstrap()
    const body = csvOf("twice", ROWS, (i, line) => (i % 1000 === 7 ? `twice-${i - 1}@example.com,dup` : line))
    const { url } = serve("/twice.csv", body)
    const res = await app.management("/v1/user-import-jobs", {
      method: "POST",
      body: { environment_id: w.environment_id, format: "csv", source_url: url },
      key: w.api_key,
    })
    expect(res.json.status).toBe("processing")
    await query(
      app,
      `select (graphile_worker.add_job('user_import.run', json_build_object('jobId', $1::text))).id::text as id`,
      [res.json.id],
    )
    const job = await finished(res.json.id, w.api_key)
    expect(job).toMatchObject({
      status: "completed",
      total_rows: ROWS,
      imported_count: ROWS - 20,
      skipped_count: 20,
      failed_count: 0,
    })
    expect(await totals(w.environment_id)).toEqual({ users: ROWS - 20, distinct_emails: ROWS - 20, events: ROWS - 20 })
    const errors = await allErrors(res.json.id, w.api_key)
    expect(errors).toHaveLength(20)
    expect(errors.every((e) => e.code === "duplicate_in_file" && e.line === e.row + 1)).toBe(true)
  }, 180_000)

  it("a byte that is not UTF-8 deep in the file fails the job before any user exists", async () => {
    const w = await app.bootstrap()
    const body = csvOf("latin", ROWS)
    // Beyond the head the request reads (1 MiB): only the worker's counting pass meets it.
    const at = body.indexOf("latin-19000@")
    body[at + 3] = 0xe9
    const { url } = serve("/latin1.csv", body)
    const res = await app.management("/v1/user-import-jobs", {
      method: "POST",
      body: { environment_id: w.environment_id, format: "csv", source_url: url },
      key: w.api_key,
    })
    expect(res.json.status).toBe("processing")
    const job = await finished(res.json.id, w.api_key)
    expect(job).toMatchObject({
      status: "failed",
      imported_count: 0,
      error: { code: "invalid_source", message: "The source is not UTF-8 text" },
    })
    expect(await totals(w.environment_id)).toEqual({ users: 0, distinct_emails: 0, events: 0 })
    expect(await allErrors(res.json.id, w.api_key)).toEqual([])
    expect(await workspaceAuditRows(app, w.workspace_id, "user_import_job.finished")).toEqual([
      expect.objectContaining({ result: "failure" }),
    ])
  }, 180_000)

  it("a broken header is seen in the request: failed on return, no worker job", async () => {
    const w = await app.bootstrap()
    const body = Buffer.concat([Buffer.from("email,password\n"), csvOf("header", ROWS).subarray("email,name\n".length)])
    const { url, file } = serve("/header.csv", body)
    const res = await app.management("/v1/user-import-jobs", {
      method: "POST",
      body: { environment_id: w.environment_id, format: "csv", source_url: url },
      key: w.api_key,
    })
    expect(res.json).toMatchObject({
      status: "failed",
      error: { code: "invalid_source" },
      completed_at: expect.any(String),
    })
    expect(file.hits).toBe(1)
    const jobs = await query(app, `select 1 from graphile_worker.jobs where key = 'user_import.run:' || $1::text`, [
      res.json.id,
    ])
    expect(jobs).toEqual([])
    expect((await totals(w.environment_id)).users).toBe(0)
  })
})
