import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../../support/app.js"
import { query } from "../support/db.js"
import { expectProblem } from "../support/problem.js"
import { randomId } from "../support/seed.js"

let app: TestApp
let a: Bootstrapped
beforeAll(async () => {
  app = await startApp()
  a = await app.bootstrap()
})
afterAll(async () => {
  await app?.close()
})

/** Inserts an audit record with a chosen time (text, so microseconds survive). */
const seed = async (
  env: string,
  fields: {
    at: string
    action?: string
    actor_type?: string
    subject_type?: string
    subject_id?: string
    result?: string
  },
) => {
  const id = randomId("aud")
  await query(
    app,
    `insert into audit_events (id, workspace_id, environment_id, actor_type, actor_id, action, subject_type, subject_id, result, details, created_at)
    values ($1, $2, $3, $4, 'mky_x', $5, $6, $7, $8, '{"k": 1}'::jsonb, $9::timestamptz)`,
    [
      id,
      a.workspace_id,
      env,
      fields.actor_type ?? "api_key",
      fields.action ?? "thing.done",
      fields.subject_type ?? "user",
      fields.subject_id ?? "usr_1",
      fields.result ?? "success",
      fields.at,
    ],
  )
  return id
}
const list = (qs: string, env = a.environment_id) =>
  app.management(`/v1/audit-events?environment_id=${env}${qs ? `&${qs}` : ""}`)
const ids = (res: { json: { data: Array<{ id: string }> } }) => res.json.data.map((e) => e.id)

/** Walks every page; asserts no duplicates. */
const _walk = async (qs: string, env: string) => {
  const seen: Array<string> = []
  let cursor: string | null = null
  do {
    const res = await list(`${qs}${cursor ? `&cursor=${cursor}` : ""}`, env)
    expect(res.status).toBe(200)
    seen.push(...ids(res))
    cursor = res.json.next_cursor
  } while (cursor)
  expect(new Set(seen).size).toBe(seen.length)
  return seen
}

describe("GET /v1/audit-events", () => {
  it("records of the routes' own writes: actor, action, subject, result, request id, details", async () => {
    const created = await app.management("/v1/users", {
      method: "POST",
      body: { environment_id: a.environment_id, email: "audited@example.com" },
    })
    const res = await list(`action=user.created&subject_id=${created.json.id}`)
    expect(res.status).toBe(200)
    expect(res.json).toEqual({
      data: [
        {
          id: expect.stringMatching(/^aud_[a-z2-7]{32}$/),
          workspace_id: a.workspace_id,
          environment_id: a.environment_id,
          actor_type: "api_key",
          actor_id: expect.stringMatching(/^mky_/),
          action: "user.created",
          subject_type: "user",
          subject_id: created.json.id,
          result: "success",
          request_id: created.headers["x-request-id"],
          details: { method: "email_otp", email_verified: false },
          created_at: new Date(app.now()).toISOString(),
        },
      ],
      next_cursor: null,
    })
  })

  it("newest first, keyset pages on (created_at, id) are exact across equal and microsecond timestamps", async () => {
    const env = await app.bootstrap()
    const e = env.environment_id
    const key = env.api_key
    const t = [
      "2024-03-01T10:00:00.000001Z",
      "2024-03-01T10:00:00.000002Z",
      "2024-03-01T10:00:00.000002Z",
      "2024-03-01T10:00:00.000002Z",
      "2024-03-01T10:00:00.001Z",
      "2024-03-02T00:00:00Z",
      "2024-03-02T00:00:00Z",
    ]
    const made = [] as Array<{ id: string; at: string }>
    for (const at of t) made.push({ id: await seed(e, { at }), at })
    const expected = [...made]
      .sort((x, y) =>
        x.at === y.at ? (x.id < y.id ? 1 : -1) : Date.parse(y.at) - Date.parse(x.at) || (y.at > x.at ? 1 : -1),
      )
      .map((m) => m.id)
    const pages: Array<string> = []
    let cursor: string | null = null
    do {
      const res = await app.management(
        `/v1/audit-events?environment_id=${e}&limit=2${cursor ? `&cursor=${cursor}` : ""}`,
        { key },
      )
      expect(res.json.data.length).toBeLessThanOrEqual(2)
      pages.push(...ids(res))
      cursor = res.json.next_cursor
    } while (cursor)
    // bootstrap wrote no audit records in this Environment: exactly the seeded ones, in order
    expect(pages).toEqual(expected)
    const first = await app.management(`/v1/audit-events?environment_id=${e}`, { key })
    expect(first.json.data).toHaveLength(7)
    expect(first.json.next_cursor).toBeNull()
  })

  it("filters: actor_type, action, subject_type, subject_id, result, created_after / created_before (exclusive)", async () => {
    const env = await app.bootstrap()
    const e = env.environment_id
    const key = env.api_key
    const x1 = await seed(e, {
      at: "2024-05-01T00:00:00Z",
      action: "user.blocked",
      actor_type: "api_key",
      subject_id: "usr_a",
    })
    const x2 = await seed(e, {
      at: "2024-05-02T00:00:00Z",
      action: "user.blocked",
      actor_type: "workspace_member",
      subject_id: "usr_b",
      result: "failure",
    })
    const x3 = await seed(e, {
      at: "2024-05-03T00:00:00Z",
      action: "user.deleted",
      actor_type: "system",
      subject_type: "session",
      subject_id: "ses_a",
    })
    const x4 = await seed(e, {
      at: "2024-05-04T12:30:00.5Z",
      action: "login.failed",
      actor_type: "end_user",
      subject_id: "usr_a",
      result: "failure",
    })
    const q = async (qs: string) => ids(await app.management(`/v1/audit-events?environment_id=${e}&${qs}`, { key }))
    expect(await q("action=user.blocked")).toEqual([x2, x1])
    expect(await q("actor_type=system")).toEqual([x3])
    expect(await q("actor_type=end_user")).toEqual([x4])
    expect(await q("subject_type=session")).toEqual([x3])
    expect(await q("subject_id=usr_a")).toEqual([x4, x1])
    expect(await q("result=failure")).toEqual([x4, x2])
    expect(await q("created_after=2024-05-02T00:00:00Z")).toEqual([x4, x3])
    expect(await q("created_before=2024-05-02T00:00:00Z")).toEqual([x1])
    expect(await q("created_after=2024-05-01T00:00:00Z&created_before=2024-05-04T00:00:00Z")).toEqual([x3, x2])
    expect(await q("created_after=2024-05-04")).toEqual([x4])
    expect(await q("created_after=2024-05-04T14:00:00%2B02:00")).toEqual([x4])
    expect(await q("created_after=2024-05-04T14:31:00%2B02:00")).toEqual([])
    expect(await q("action=user.blocked&actor_type=api_key&result=success&subject_id=usr_a")).toEqual([x1])
    expect(await q("action=nothing")).toEqual([])
  })

  it("refuses bad filters and cursors with 400 invalid_request; environment_id is required", async () => {
    for (const qs of [
      "actor_type=robot",
      "result=maybe",
      "created_after=yesterday",
      "created_before=2024-13-01",
      "created_after=2024-05-01T00:00:00",
      "limit=0",
      "limit=101",
      "cursor=abc",
      `cursor=${Buffer.from("2024-01-01T00:00:00.000000Z").toString("base64url")}`,
      "action=",
    ]) {
      expectProblem(await list(qs), 400, "invalid_request")
    }
    expectProblem(await app.management("/v1/audit-events"), 400, "invalid_request")
  })

  it("walks a larger filtered set page by page without gaps", async () => {
    const env = await app.bootstrap()
    const e = env.environment_id
    const base = Date.parse("2024-06-01T00:00:00Z")
    const made = [] as Array<string>
    for (let i = 0; i < 60; i++) {
      const id = await seed(e, {
        at: new Date(base + Math.floor(i / 3) * 1000).toISOString(),
        action: i % 2 === 0 ? "even" : "odd",
      })
      if (i % 2 === 0) made.push(id)
    }
    const walked = [] as Array<string>
    let cursor: string | null = null
    do {
      const res = await app.management(
        `/v1/audit-events?environment_id=${e}&action=even&limit=7${cursor ? `&cursor=${cursor}` : ""}`,
        { key: env.api_key },
      )
      walked.push(...ids(res))
      cursor = res.json.next_cursor
    } while (cursor)
    expect(walked.sort()).toEqual(made.sort())
    expect(walked).toHaveLength(30)
  })
})

describe("audit_events is append-only in the database", () => {
  /** The database's answer to a statement: the pg error code and message of the refusal. */
  const refusal = (text: string, params: ReadonlyArray<unknown> = []) =>
    query(app, text, params).then(
      () => undefined,
      (e: { reason?: { _tag?: string; cause?: { code?: string; message?: string } } }) => ({
        tag: e.reason?._tag,
        code: e.reason?.cause?.code,
        message: e.reason?.cause?.message,
      }),
    )

  it("UPDATE, DELETE and TRUNCATE are refused by the database (42501, append-only) and the rows stay", async () => {
    const id = await seed(a.environment_id, { at: "2024-01-01T00:00:00Z", action: "immutable" })
    const refused = { tag: "AuthorizationError", code: "42501", message: "audit_events is append-only" }
    expect(await refusal("update audit_events set action = 'tampered' where id = $1", [id])).toEqual(refused)
    expect(await refusal("update audit_events set action = 'tampered'")).toEqual(refused)
    expect(await refusal("delete from audit_events where id = $1", [id])).toEqual(refused)
    expect(await refusal("truncate audit_events")).toEqual(refused)
    expect(await query<{ action: string }>(app, "select action from audit_events where id = $1", [id])).toEqual([
      { action: "immutable" },
    ])
  })

  it("there is no route to change or delete audit events", async () => {
    for (const method of ["POST", "PATCH", "DELETE", "PUT"]) {
      const res = await app.management(`/v1/audit-events?environment_id=${a.environment_id}`, { method, body: {} })
      expectProblem(res, 405, "method_not_allowed")
    }
  })
})
