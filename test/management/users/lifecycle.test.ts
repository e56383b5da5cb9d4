import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../../support/app.js"
import { query, snapshot } from "../support/db.js"
import { expectProblem } from "../support/problem.js"
import { environmentAuditRows, environmentEvents } from "../support/records.js"
import { seedRefreshFamily, seedSession } from "../support/seed.js"

let app: TestApp
let a: Bootstrapped
beforeAll(async () => {
  app = await startApp()
  a = await app.bootstrap()
})
afterAll(async () => {
  await app?.close()
})

let n = 0
const newUser = async (extra: Record<string, unknown> = {}) => {
  const res = await app.management("/v1/users", {
    method: "POST",
    body: { environment_id: a.environment_id, email: `life${++n}@example.com`, ...extra },
  })
  expect(res.status).toBe(201)
  return res
}
const at = (path: string) => `${path}${path.includes("?") ? "&" : "?"}environment_id=${a.environment_id}`
const call = (method: string, path: string, opts: { body?: unknown; headers?: Record<string, string> } = {}) =>
  app.management(at(path), { method, ...opts })
const sessionsOf = (userId: string) =>
  seedSession(app, { workspaceId: a.workspace_id, environmentId: a.environment_id, userId })

/** What UserInfo and introspection read to decide whether a token is still active. */
const securityState = async (userId: string) => {
  const [user] = await query<{ status: string; security_version: number; version: number }>(
    app,
    "select status, security_version, version from users where id = $1",
    [userId],
  )
  const sessions = await query<{ id: string; revoked_at: Date | null; revoked_reason: string | null }>(
    app,
    "select id, revoked_at, revoked_reason from login_sessions where user_id = $1 order by id",
    [userId],
  )
  return { ...user!, sessions }
}

describe("POST /v1/users/{userId}/block", () => {
  it("blocks: status blocked, reason kept, security_version +1, every live session revoked (session.revoked admin_revocation), user.blocked admin_action, audited", async () => {
    const user = (await newUser()).json
    const s1 = await sessionsOf(user.id)
    const s2 = await sessionsOf(user.id)
    const res = await call("POST", `/v1/users/${user.id}/block`, { body: { reason: "chargeback fraud" } })
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({ id: user.id, status: "blocked", blocked_reason: "chargeback fraud" })
    expect(res.headers["etag"]).toBe(`"${user.id}.2"`)
    const state = await securityState(user.id)
    expect(state.status).toBe("blocked")
    expect(state.security_version).toBe(2)
    expect(state.sessions.every((s) => s.revoked_at !== null && s.revoked_reason === "admin_revocation")).toBe(true)
    const revoked = (await environmentEvents(app, a.environment_id, "session.revoked")).filter(
      (e) => e.payload.userId === user.id,
    )
    expect(revoked.map((e) => e.payload).sort((x, y) => x.sessionId.localeCompare(y.sessionId))).toEqual(
      [s1, s2].sort().map((sessionId) => ({ userId: user.id, sessionId, reason: "admin_revocation" })),
    )
    const blocked = (await environmentEvents(app, a.environment_id, "user.blocked")).filter(
      (e) => e.payload.userId === user.id,
    )
    expect(blocked.map((e) => e.payload)).toEqual([{ userId: user.id, reason: "admin_action" }])
    expect(blocked[0]!.envelope.trace.requestId).toBe(res.headers["x-request-id"])
    const audit = (await environmentAuditRows(app, a.environment_id, "user.blocked")).filter(
      (r) => r.subject_id === user.id,
    )
    expect(audit).toHaveLength(1)
    expect(audit[0]!.details).toEqual({ reason: "admin_action", note: "chargeback fraud", revoked_sessions: 2 })
  })

  it("reason abuse_detection (an abuse-detection system calling the route): user.blocked carries reason abuse_detection", async () => {
    const user = (await newUser()).json
    const res = await call("POST", `/v1/users/${user.id}/block`, { body: { reason: "abuse_detection" } })
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({ status: "blocked", blocked_reason: "abuse_detection" })
    const blocked = (await environmentEvents(app, a.environment_id, "user.blocked")).filter(
      (e) => e.payload.userId === user.id,
    )
    expect(blocked.map((e) => e.payload)).toEqual([{ userId: user.id, reason: "abuse_detection" }])
    const audit = (await environmentAuditRows(app, a.environment_id, "user.blocked")).filter(
      (r) => r.subject_id === user.id,
    )
    expect(audit.map((r) => r.details)).toEqual([
      { reason: "abuse_detection", note: "abuse_detection", revoked_sessions: 0 },
    ])
    // any other note, even one naming abuse in other words, is an administrator's action
    const other = (await newUser()).json
    expect((await call("POST", `/v1/users/${other.id}/block`, { body: { reason: "Abuse_Detection" } })).status).toBe(
      200,
    )
    expect(
      (await environmentEvents(app, a.environment_id, "user.blocked"))
        .filter((e) => e.payload.userId === other.id)
        .map((e) => e.payload.reason),
    ).toEqual(["admin_action"])
  })

  it("accepts no body or {}; blocking a blocked user changes nothing", async () => {
    const user = (await newUser()).json
    const res = await app.management(at(`/v1/users/${user.id}/block`), { method: "POST" })
    expect(res.status).toBe(200)
    expect(res.json.blocked_reason).toBeNull()
    const before = await snapshot(app, a.environment_id)
    const again = await call("POST", `/v1/users/${user.id}/block`, { body: {} })
    expect(again.status).toBe(200)
    expect(again.headers["etag"]).toBe(res.headers["etag"])
    expect(await snapshot(app, a.environment_id)).toEqual(before)
  })

  it("refuses a bad body (400) and changes nothing", async () => {
    const user = (await newUser()).json
    const before = await snapshot(app, a.environment_id)
    expectProblem(
      await call("POST", `/v1/users/${user.id}/block`, { body: { reason: 5 } }),
      400,
      "invalid_request_body",
    )
    expectProblem(await call("POST", `/v1/users/${user.id}/block`, { body: { reason: "" } }), 400, "invalid_request")
    expectProblem(
      await call("POST", `/v1/users/${user.id}/block`, { body: { reason: "x".repeat(501) } }),
      400,
      "invalid_request",
    )
    expectProblem(await call("POST", `/v1/users/${user.id}/block`, { body: { why: "x" } }), 400, "invalid_request_body")
    expectProblem(await call("POST", `/v1/users/${user.id}/block`, { body: "nope" }), 400, "invalid_request_body")
    expect(await snapshot(app, a.environment_id)).toEqual(before)
    expect((await securityState(user.id)).status).toBe("active")
  })

  it("concurrent blocks: one transition, one user.blocked, one security_version bump", async () => {
    const user = (await newUser()).json
    await sessionsOf(user.id)
    const results = await Promise.all([1, 2, 3, 4].map(() => call("POST", `/v1/users/${user.id}/block`)))
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200])
    expect((await securityState(user.id)).security_version).toBe(2)
    expect(
      (await environmentEvents(app, a.environment_id, "user.blocked")).filter((e) => e.payload.userId === user.id),
    ).toHaveLength(1)
    expect(
      (await environmentEvents(app, a.environment_id, "session.revoked")).filter((e) => e.payload.userId === user.id),
    ).toHaveLength(1)
  })

  it("an unknown user is 404 user_not_found", async () => {
    expectProblem(await call("POST", "/v1/users/usr_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/block"), 404, "user_not_found")
  })
})

describe("refresh families end with their sessions", () => {
  const familyState = async (id: string) =>
    (
      await query<{ revoked_at: Date | null; revoked_reason: string | null }>(
        app,
        "select revoked_at, revoked_reason from refresh_families where id = $1",
        [id],
      )
    )[0]!

  it("block, DELETE and session revocation revoke the refresh families behind the revoked sessions", async () => {
    const owner = (userId: string) => ({ workspaceId: a.workspace_id, environmentId: a.environment_id, userId })
    const blocked = (await newUser()).json
    const s1 = await sessionsOf(blocked.id)
    const f1 = await seedRefreshFamily(app, { ...owner(blocked.id), sessionId: s1 })
    await call("POST", `/v1/users/${blocked.id}/block`)
    expect(await familyState(f1)).toEqual({ revoked_at: expect.any(Date), revoked_reason: "revoked" })

    const deleted = (await newUser()).json
    const f2 = await seedRefreshFamily(app, { ...owner(deleted.id), sessionId: await sessionsOf(deleted.id) })
    await call("DELETE", `/v1/users/${deleted.id}`)
    expect((await familyState(f2)).revoked_at).toEqual(expect.any(Date))

    const user = (await newUser()).json
    const kept = await sessionsOf(user.id)
    const ended = await sessionsOf(user.id)
    const fKept = await seedRefreshFamily(app, { ...owner(user.id), sessionId: kept })
    const fEnded = await seedRefreshFamily(app, { ...owner(user.id), sessionId: ended })
    await call("DELETE", `/v1/users/${user.id}/sessions/${ended}`)
    expect((await familyState(fEnded)).revoked_at).toEqual(expect.any(Date))
    expect((await familyState(fKept)).revoked_at).toBeNull()
    await call("DELETE", `/v1/users/${user.id}/sessions`)
    expect((await familyState(fKept)).revoked_at).toEqual(expect.any(Date))
  })
})

describe("POST /v1/users/{userId}/unblock", () => {
  it("unblocks: status active, reason cleared, security_version NOT restored, user.updated [status], audited", async () => {
    const user = (await newUser()).json
    await call("POST", `/v1/users/${user.id}/block`, { body: { reason: "r" } })
    const res = await call("POST", `/v1/users/${user.id}/unblock`)
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({ status: "active", blocked_reason: null })
    expect(res.headers["etag"]).toBe(`"${user.id}.3"`)
    expect((await securityState(user.id)).security_version).toBe(2)
    const updated = (await environmentEvents(app, a.environment_id, "user.updated")).filter(
      (e) => e.payload.userId === user.id,
    )
    expect(updated.map((e) => e.payload)).toEqual([{ userId: user.id, changedFields: ["status"] }])
    expect(
      (await environmentAuditRows(app, a.environment_id, "user.unblocked")).filter((r) => r.subject_id === user.id),
    ).toHaveLength(1)
  })

  it("unblocking an active user changes nothing", async () => {
    const user = await newUser()
    const before = await snapshot(app, a.environment_id)
    const res = await call("POST", `/v1/users/${user.json.id}/unblock`)
    expect(res.status).toBe(200)
    expect(res.headers["etag"]).toBe(user.headers["etag"])
    expect(await snapshot(app, a.environment_id)).toEqual(before)
  })
})

describe("DELETE /v1/users/{userId}", () => {
  it("moves to pending_deletion: security_version +1, sessions revoked, user.deleted admin_action, audited; GET still shows it", async () => {
    const user = (await newUser()).json
    const s1 = await sessionsOf(user.id)
    await app.advance("1 minute")
    const res = await call("DELETE", `/v1/users/${user.id}`)
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({
      id: user.id,
      status: "pending_deletion",
      deleted_at: new Date(app.now()).toISOString(),
    })
    expect(res.headers["etag"]).toBe(`"${user.id}.2"`)
    const state = await securityState(user.id)
    expect(state).toMatchObject({ status: "pending_deletion", security_version: 2 })
    expect(state.sessions).toEqual([{ id: s1, revoked_at: expect.any(Date), revoked_reason: "admin_revocation" }])
    const mine = (await environmentEvents(app, a.environment_id))
      .filter((e) => e.payload.userId === user.id)
      .map((e) => e.type)
    expect(mine).toEqual(["user.created", "session.revoked", "user.deleted"])
    expect(
      (await environmentEvents(app, a.environment_id, "user.deleted")).find((e) => e.payload.userId === user.id)!
        .payload,
    ).toEqual({ userId: user.id, reason: "admin_action" })
    expect(
      (await environmentAuditRows(app, a.environment_id, "user.deleted")).filter((r) => r.subject_id === user.id),
    ).toHaveLength(1)
    const got = await call("GET", `/v1/users/${user.id}`)
    expect(got.json.status).toBe("pending_deletion")
    expect(got.headers["etag"]).toBe(res.headers["etag"])
  })

  it("a user pending deletion: DELETE again changes nothing; PATCH, block and unblock are 409 user_pending_deletion; the email stays taken", async () => {
    const created = await newUser()
    const user = created.json
    await call("DELETE", `/v1/users/${user.id}`)
    const before = await snapshot(app, a.environment_id)
    expect((await call("DELETE", `/v1/users/${user.id}`)).status).toBe(200)
    expectProblem(await call("PATCH", `/v1/users/${user.id}`, { body: { name: "x" } }), 409, "user_pending_deletion")
    expectProblem(await call("POST", `/v1/users/${user.id}/block`), 409, "user_pending_deletion")
    expectProblem(await call("POST", `/v1/users/${user.id}/unblock`), 409, "user_pending_deletion")
    expect(await snapshot(app, a.environment_id)).toEqual(before)
    expectProblem(
      await app.management("/v1/users", {
        method: "POST",
        body: { environment_id: a.environment_id, email: user.email },
      }),
      409,
      "email_already_registered",
    )
  })

  it("deletes a blocked user too", async () => {
    const user = (await newUser()).json
    await call("POST", `/v1/users/${user.id}/block`)
    const res = await call("DELETE", `/v1/users/${user.id}`)
    expect(res.json.status).toBe("pending_deletion")
    expect((await securityState(user.id)).security_version).toBe(3)
  })

  it("If-Match: a stale ETag is 412 precondition_failed and nothing changes; the current one deletes", async () => {
    const created = await newUser()
    const user = created.json
    const renamed = await call("PATCH", `/v1/users/${user.id}`, { body: { name: "renamed" } })
    const before = await snapshot(app, a.environment_id)
    expectProblem(
      await call("DELETE", `/v1/users/${user.id}`, { headers: { "if-match": created.headers["etag"] as string } }),
      412,
      "precondition_failed",
    )
    expect(await snapshot(app, a.environment_id)).toEqual(before)
    expect((await securityState(user.id)).status).toBe("active")
    const res = await call("DELETE", `/v1/users/${user.id}`, {
      headers: { "if-match": renamed.headers["etag"] as string },
    })
    expect(res.status).toBe(200)
    expect(res.json.status).toBe("pending_deletion")
  })

  it("a concurrent PATCH and DELETE with the same If-Match: exactly one wins", async () => {
    const created = await newUser()
    const etag = created.headers["etag"] as string
    const [p, d] = await Promise.all([
      call("PATCH", `/v1/users/${created.json.id}`, { body: { name: "racer" }, headers: { "if-match": etag } }),
      call("DELETE", `/v1/users/${created.json.id}`, { headers: { "if-match": etag } }),
    ])
    expect([p.status, d.status].sort()).toEqual([200, 412])
  })

  it("Idempotency-Key: a retried DELETE replays the first answer", async () => {
    const user = (await newUser()).json
    const headers = { "idempotency-key": `delete-${user.id}` }
    const first = await call("DELETE", `/v1/users/${user.id}`, { headers })
    const replay = await call("DELETE", `/v1/users/${user.id}`, { headers })
    expect(replay.json).toEqual(first.json)
    expect(replay.headers["idempotent-replayed"]).toBe("true")
    expect(
      (await environmentEvents(app, a.environment_id, "user.deleted")).filter((e) => e.payload.userId === user.id),
    ).toHaveLength(1)
  })

  it("an unknown user is 404 user_not_found", async () => {
    expectProblem(await call("DELETE", "/v1/users/usr_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"), 404, "user_not_found")
  })
})
