import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../../support/app.js"
import { query, snapshot } from "../support/db.js"
import { expectProblem } from "../support/problem.js"
import { environmentAuditRows, environmentEvents } from "../support/records.js"

let app: TestApp
let a: Bootstrapped
beforeAll(async () => {
  app = await startApp()
  a = await app.bootstrap()
})
afterAll(async () => {
  await app?.close()
})

const USER_ID = /^usr_[a-z2-7]{32}$/
let n = 0
const email = (tag = "user") => `${tag}.${++n}@example.com`

const create = (body: Record<string, unknown>, opts: { headers?: Record<string, string>; path?: string } = {}) =>
  app.management(opts.path ?? "/v1/users", {
    method: "POST",
    body: { environment_id: a.environment_id, ...body },
    ...(opts.headers ? { headers: opts.headers } : {}),
  })
const get = (id: string, headers: Record<string, string> = {}) =>
  app.management(`/v1/users/${id}?environment_id=${a.environment_id}`, { headers })
const patch = (id: string, body: unknown, headers: Record<string, string> = {}) =>
  app.management(`/v1/users/${id}?environment_id=${a.environment_id}`, { method: "PATCH", body, headers })

describe("POST /v1/users", () => {
  it("creates a user with every optional field, returns the full record with ETag, emits user.created (email_otp) and audits", async () => {
    const address = email("Full")
    const res = await create({
      email: address,
      email_verified: true,
      name: "Ada Lovelace",
      avatar_url: "https://cdn.example.com/ada.png",
      locale: "en-gb",
      timezone: "europe/london",
      metadata: { plan: "pro", seats: 3, tags: ["a"] },
    })
    expect(res.status).toBe(201)
    expect(res.json).toEqual({
      id: expect.stringMatching(USER_ID),
      environment_id: a.environment_id,
      email: address,
      email_verified: true,
      name: "Ada Lovelace",
      avatar_url: "https://cdn.example.com/ada.png",
      locale: "en-GB",
      timezone: "Europe/London",
      metadata: { plan: "pro", seats: 3, tags: ["a"] },
      status: "active",
      blocked_reason: null,
      created_at: new Date(app.now()).toISOString(),
      updated_at: new Date(app.now()).toISOString(),
      last_login_at: null,
      deleted_at: null,
    })
    expect(res.headers["etag"]).toBe(`"${res.json.id}.1"`)
    expect(res.headers["location"]).toBe(`/v1/users/${res.json.id}?environment_id=${a.environment_id}`)
    const created = (await environmentEvents(app, a.environment_id, "user.created")).find(
      (e) => e.payload.userId === res.json.id,
    )!
    expect(created.payload).toEqual({
      userId: res.json.id,
      method: "email_otp",
      maskedEmail: expect.stringMatching(/\*.*@.*\*/),
    })
    expect(JSON.stringify(created.envelope)).not.toContain(address)
    expect(created.envelope.actor).toEqual({ type: "api_key", id: expect.stringMatching(/^mky_/) })
    const [audit] = await environmentAuditRows(app, a.environment_id, "user.created")
    expect(audit).toMatchObject({
      actor_type: "api_key",
      subject_type: "user",
      subject_id: res.json.id,
      result: "success",
      request_id: res.headers["x-request-id"],
    })
    expect(JSON.stringify(audit!.details)).not.toContain(address)
  })

  it("defaults: email_verified false, profile fields null, metadata {}", async () => {
    const res = await create({ email: email() })
    expect(res.status).toBe(201)
    expect(res.json).toMatchObject({
      email_verified: false,
      name: null,
      avatar_url: null,
      locale: null,
      timezone: null,
      metadata: {},
      status: "active",
    })
  })

  it("accepts environment_id in the query instead of the body", async () => {
    const res = await app.management(`/v1/users?environment_id=${a.environment_id}`, {
      method: "POST",
      body: { email: email() },
    })
    expect(res.status).toBe(201)
    expect(res.json.environment_id).toBe(a.environment_id)
  })

  it("email is unique per Environment, case-insensitively: 409 email_already_registered and nothing changes", async () => {
    const address = email("Dup")
    expect((await create({ email: address })).status).toBe(201)
    const before = await snapshot(app, a.environment_id)
    expectProblem(await create({ email: address.toUpperCase() }), 409, "email_already_registered")
    expect(await snapshot(app, a.environment_id)).toEqual(before)
  })

  it("two concurrent creations of one address make exactly one user", async () => {
    const address = email("race")
    const results = await Promise.all([1, 2, 3, 4].map(() => create({ email: address })))
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409])
    const rows = await query(app, "select id from users where environment_id = $1 and email_normalized = $2", [
      a.environment_id,
      address,
    ])
    expect(rows).toHaveLength(1)
    expect(
      (await environmentEvents(app, a.environment_id, "user.created")).filter((e) => e.payload.userId === rows[0]!.id),
    ).toHaveLength(1)
  })

  const invalid: Array<[string, Record<string, unknown>, string]> = [
    ["email syntax", { email: "not-an-email" }, "invalid_request"],
    ["email without a dot in the domain", { email: "a@localhost" }, "invalid_request"],
    ["email with spaces", { email: " a@example.com" }, "invalid_request"],
    ["avatar_url not a URL", { avatar_url: "not a url" }, "invalid_request"],
    ["avatar_url javascript:", { avatar_url: "javascript:alert(1)" }, "invalid_request"],
    ["avatar_url with credentials", { avatar_url: "https://u:p@example.com/a.png" }, "invalid_request"],
    ["locale not BCP 47", { locale: "english!" }, "invalid_request"],
    ["locale with underscore", { locale: "en_US" }, "invalid_request"],
    ["timezone unknown", { timezone: "Mars/Olympus" }, "invalid_request"],
    ["timezone as an offset", { timezone: "+02:00" }, "invalid_request"],
    ["name empty", { name: "" }, "invalid_request"],
    ["name too long", { name: "x".repeat(257) }, "invalid_request"],
    ["metadata over 16 KiB", { metadata: { big: "x".repeat(17000) } }, "invalid_request"],
    ["email missing", { email: undefined }, "invalid_request_body"],
    ["email not a string", { email: 42 }, "invalid_request_body"],
    ["email_verified not a boolean", { email_verified: "yes" }, "invalid_request_body"],
    ["metadata not an object", { metadata: [1, 2] }, "invalid_request_body"],
    ["unknown field", { nickname: "x" }, "invalid_request_body"],
    ["status cannot be set", { status: "blocked" }, "invalid_request_body"],
  ]
  for (const [what, fields, code] of invalid) {
    it(`refuses ${what}: 400 ${code}, nothing created`, async () => {
      const before = await snapshot(app, a.environment_id)
      const body = { email: email("bad"), ...fields }
      expectProblem(await create(body), 400, code)
      expect(await snapshot(app, a.environment_id)).toEqual(before)
    })
  }

  it("refuses unreadable JSON (invalid_request_body) and a missing environment_id (invalid_request)", async () => {
    expectProblem(await app.management("/v1/users", { method: "POST", body: "{not json" }), 400, "invalid_request_body")
    expectProblem(
      await app.management("/v1/users", { method: "POST", body: { email: email() } }),
      400,
      "invalid_request",
    )
    expectProblem(
      await app.management(`/v1/users?environment_id=${a.environment_id}`, {
        method: "POST",
        body: { email: email(), environment_id: "env_other" },
      }),
      400,
      "invalid_request",
    )
  })

  it("Idempotency-Key: the same request replays the first answer; a different body conflicts; one user exists", async () => {
    const address = email("idem")
    const headers = { "idempotency-key": `create-${address}` }
    const first = await create({ email: address }, { headers })
    const again = await create({ email: address }, { headers })
    expect(first.status).toBe(201)
    expect(again.status).toBe(201)
    expect(again.json).toEqual(first.json)
    expect(again.headers["idempotent-replayed"]).toBe("true")
    expect(again.headers["etag"]).toBe(first.headers["etag"])
    expectProblem(await create({ email: email("other") }, { headers }), 409, "idempotency_key_conflict")
    expect(await query(app, "select id from users where email_normalized = $1", [address])).toHaveLength(1)
    expect(
      (await environmentEvents(app, a.environment_id, "user.created")).filter(
        (e) => e.payload.userId === first.json.id,
      ),
    ).toHaveLength(1)
  })

  it("Idempotency-Key: concurrent first requests create one user", async () => {
    const address = email("idem-race")
    const headers = { "idempotency-key": `race-${address}` }
    const results = await Promise.all([1, 2, 3].map(() => create({ email: address }, { headers })))
    expect(results.map((r) => r.status)).toEqual([201, 201, 201])
    expect(new Set(results.map((r) => r.json.id)).size).toBe(1)
  })
})

describe("GET /v1/users/{userId}", () => {
  it("returns the record with its ETag; an unknown id is 404 user_not_found", async () => {
    const created = await create({ email: email() })
    const res = await get(created.json.id)
    expect(res.status).toBe(200)
    expect(res.json).toEqual(created.json)
    expect(res.headers["etag"]).toBe(created.headers["etag"])
    expectProblem(await get("usr_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"), 404, "user_not_found")
  })

  it("requires query environment_id (400 invalid_request); an unknown Environment is 404 not_found", async () => {
    const created = await create({ email: email() })
    expectProblem(await app.management(`/v1/users/${created.json.id}`), 400, "invalid_request")
    expectProblem(
      await app.management(`/v1/users/${created.json.id}?environment_id=env_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa`),
      404,
      "not_found",
    )
  })
})

describe("PATCH /v1/users/{userId}", () => {
  it("updates profile and metadata, bumps the ETag, emits user.updated with the changed wire fields and audits", async () => {
    const created = await create({ email: email(), name: "Old", metadata: { a: 1 } })
    await app.advance("1 minute")
    const res = await patch(created.json.id, {
      name: "New",
      locale: "fr",
      metadata: { a: 1 },
      timezone: "Asia/Tokyo",
      email_verified: true,
    })
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({
      name: "New",
      locale: "fr",
      timezone: "Asia/Tokyo",
      metadata: { a: 1 },
      email_verified: true,
    })
    expect(res.json.updated_at).toBe(new Date(app.now()).toISOString())
    expect(res.json.created_at).toBe(created.json.created_at)
    expect(res.headers["etag"]).toBe(`"${created.json.id}.2"`)
    const updated = (await environmentEvents(app, a.environment_id, "user.updated")).filter(
      (e) => e.payload.userId === created.json.id,
    )
    // metadata was sent with its current value: not a change
    expect(updated).toHaveLength(1)
    expect(updated[0]!.payload.userId).toBe(created.json.id)
    expect([...updated[0]!.payload.changedFields].sort()).toEqual(["email_verified", "locale", "name", "timezone"])
    const audits = (await environmentAuditRows(app, a.environment_id, "user.updated")).filter(
      (r) => r.subject_id === created.json.id,
    )
    expect(audits).toHaveLength(1)
    expect(audits[0]!.details.changed_fields.sort()).toEqual(["email_verified", "locale", "name", "timezone"])
    expect((await get(created.json.id)).json).toEqual(res.json)
  })

  it("null clears a profile field; metadata replaces the whole object", async () => {
    const created = await create({
      email: email(),
      name: "Someone",
      avatar_url: "https://cdn.example.com/x.png",
      metadata: { a: 1, b: 2 },
    })
    const res = await patch(created.json.id, { name: null, avatar_url: null, metadata: { c: 3 } })
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({ name: null, avatar_url: null, metadata: { c: 3 } })
  })

  it("a PATCH that changes nothing keeps the ETag and emits nothing", async () => {
    const created = await create({ email: email(), name: "Same" })
    const before = await snapshot(app, a.environment_id)
    const res = await patch(created.json.id, { name: "Same" })
    expect(res.status).toBe(200)
    expect(res.headers["etag"]).toBe(created.headers["etag"])
    expect(await snapshot(app, a.environment_id)).toEqual(before)
  })

  it("email cannot change: 400 invalid_request and nothing changes; nor status or read-only fields", async () => {
    const created = await create({ email: email() })
    const before = await snapshot(app, a.environment_id)
    for (const body of [
      { email: "new@example.com" },
      { email: "new@example.com", name: "x" },
      { status: "blocked" },
      { id: "usr_x" },
      { created_at: "2020-01-01T00:00:00Z" },
    ]) {
      expectProblem(await patch(created.json.id, body), 400, "invalid_request")
    }
    expectProblem(await patch(created.json.id, {}), 400, "invalid_request")
    expectProblem(await patch(created.json.id, { nickname: "x" }), 400, "invalid_request_body")
    expectProblem(await patch(created.json.id, { name: 5 }), 400, "invalid_request_body")
    expectProblem(await patch(created.json.id, { locale: "??" }), 400, "invalid_request")
    expectProblem(await patch(created.json.id, "[]"), 400, "invalid_request_body")
    expect(await snapshot(app, a.environment_id)).toEqual(before)
    expect((await get(created.json.id)).json).toEqual(created.json)
  })

  it("If-Match: the current ETag succeeds; a stale one is 412 precondition_failed and nothing changes", async () => {
    const created = await create({ email: email() })
    const etag1 = created.headers["etag"] as string
    const ok = await patch(created.json.id, { name: "One" }, { "if-match": etag1 })
    expect(ok.status).toBe(200)
    const before = await snapshot(app, a.environment_id)
    expectProblem(await patch(created.json.id, { name: "Two" }, { "if-match": etag1 }), 412, "precondition_failed")
    expect(await snapshot(app, a.environment_id)).toEqual(before)
    expect((await get(created.json.id)).json.name).toBe("One")
    expect((await patch(created.json.id, { name: "Three" }, { "if-match": ok.headers["etag"] as string })).status).toBe(
      200,
    )
  })

  it("If-Match race: two PATCHes with the same ETag, exactly one wins", async () => {
    const created = await create({ email: email() })
    const etag = created.headers["etag"] as string
    const results = await Promise.all(
      ["A", "B", "C"].map((name) => patch(created.json.id, { name }, { "if-match": etag })),
    )
    expect(results.map((r) => r.status).sort()).toEqual([200, 412, 412])
    expect(
      (await environmentEvents(app, a.environment_id, "user.updated")).filter(
        (e) => e.payload.userId === created.json.id,
      ),
    ).toHaveLength(1)
  })

  it("an unknown user is 404 user_not_found", async () => {
    expectProblem(await patch("usr_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", { name: "x" }), 404, "user_not_found")
  })

  it("Idempotency-Key replays the PATCH answer and the same key on another user conflicts", async () => {
    const u1 = await create({ email: email() })
    const u2 = await create({ email: email() })
    const headers = { "idempotency-key": `patch-${u1.json.id}` }
    const first = await patch(u1.json.id, { name: "Once" }, headers)
    const replay = await patch(u1.json.id, { name: "Once" }, headers)
    expect(replay.json).toEqual(first.json)
    expect(replay.headers["idempotent-replayed"]).toBe("true")
    expectProblem(await patch(u2.json.id, { name: "Once" }, headers), 409, "idempotency_key_conflict")
  })
})

describe("GET /v1/users", () => {
  it("pages with keyset cursors (limit default 25, max 100) without duplicates or gaps", async () => {
    const fresh = await app.bootstrap()
    const key = fresh.api_key
    const ids: Array<string> = []
    for (let i = 0; i < 30; i++) {
      const res = await app.management("/v1/users", {
        method: "POST",
        key,
        body: { environment_id: fresh.environment_id, email: `page${i}@example.com` },
      })
      ids.push(res.json.id)
    }
    const first = await app.management(`/v1/users?environment_id=${fresh.environment_id}`, { key })
    expect(first.status).toBe(200)
    expect(first.json.data).toHaveLength(25)
    expect(first.json.next_cursor).toEqual(expect.any(String))
    const second = await app.management(
      `/v1/users?environment_id=${fresh.environment_id}&cursor=${first.json.next_cursor}`,
      { key },
    )
    expect(second.json.data).toHaveLength(5)
    expect(second.json.next_cursor).toBeNull()
    const seen = [...first.json.data, ...second.json.data].map((u: { id: string }) => u.id)
    expect(seen).toEqual([...ids].sort())
    const all = await app.management(`/v1/users?environment_id=${fresh.environment_id}&limit=100`, { key })
    expect(all.json.data).toHaveLength(30)
    expect(all.json.next_cursor).toBeNull()
    const exact = await app.management(`/v1/users?environment_id=${fresh.environment_id}&limit=30`, { key })
    expect(exact.json.next_cursor).toBeNull()
    for (const bad of ["limit=0", "limit=101", "limit=abc", "cursor=!!", "status=deleted", "search="]) {
      expectProblem(
        await app.management(`/v1/users?environment_id=${fresh.environment_id}&${bad}`, { key }),
        400,
        "invalid_request",
      )
    }
    expectProblem(await app.management("/v1/users", { key }), 400, "invalid_request")
  })

  it("search: case-insensitive email prefix or name substring; LIKE wildcards are literal; status filter", async () => {
    const env = await app.bootstrap()
    const key = env.api_key
    const mk = (body: Record<string, unknown>) =>
      app.management("/v1/users", { method: "POST", key, body: { environment_id: env.environment_id, ...body } })
    const alice = (await mk({ email: "Alice.Smith@example.com", name: "Alice Smith" })).json
    const bob = (await mk({ email: "bob@example.com", name: "Robert 'Bob' Jones" })).json
    const carol = (await mk({ email: "carol@alice.example", name: null })).json
    const under = (await mk({ email: "under_score@example.com", name: "100% real" })).json
    const search = async (q: string, extra = "") =>
      (
        await app.management(`/v1/users?environment_id=${env.environment_id}&search=${encodeURIComponent(q)}${extra}`, {
          key,
        })
      ).json.data
        .map((u: { id: string }) => u.id)
        .sort()
    expect(await search("ALICE")).toEqual([alice.id])
    expect(await search("alice.s")).toEqual([alice.id])
    expect(await search("smi")).toEqual([alice.id])
    expect(await search("bob")).toEqual([bob.id])
    expect(await search("JONES")).toEqual([bob.id])
    expect(await search("carol@")).toEqual([carol.id])
    expect(await search("example.com")).toEqual([])
    expect(await search("under_")).toEqual([under.id])
    expect(await search("_")).toEqual([])
    expect(await search("100%")).toEqual([under.id])
    expect(await search("%")).toEqual([under.id])
    await app.management(`/v1/users/${bob.id}/block?environment_id=${env.environment_id}`, { method: "POST", key })
    expect(await search("o", "&status=blocked")).toEqual([bob.id])
    const active = (
      await app.management(`/v1/users?environment_id=${env.environment_id}&status=active`, { key })
    ).json.data
      .map((u: { id: string }) => u.id)
      .sort()
    expect(active).toEqual([alice.id, carol.id, under.id].sort())
  })
})
