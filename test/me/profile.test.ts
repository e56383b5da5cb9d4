import { describe, expect, it } from "vitest"
import { liveStateChanged } from "../../src/platform/live-state-changes.js"
import {
  count,
  expectProblem,
  introspect,
  me,
  query,
  signIn,
  signedInUser,
  tryRefresh,
  useMeApp,
  userEvents,
  userinfo,
} from "./support.js"

// GET / PATCH / DELETE /me (spec: Self-service /me; "User profile (GET /me)"; /me rules 1, 7;
// States and transitions: DELETE /me -> pending_deletion; Events: user.updated, user.deleted,
// session.revoked).

const ctx = useMeApp()

const PROFILE_FIELDS = [
  "avatar_url",
  "created_at",
  "email",
  "email_verified",
  "last_login_at",
  "locale",
  "name",
  "status",
  "timezone",
  "user_id",
]

describe("GET /me", () => {
  it("answers the profile with the recorded field names, nothing else", async () => {
    const { user, token } = await signedInUser(ctx, "profile", { name: "Ada" })
    const res = await me(ctx, token, "")
    expect(res.status, res.text).toBe(200)
    expect(Object.keys(res.json).sort()).toEqual(PROFILE_FIELDS)
    const stored = (
      await query<{ last_login_at: Date | null }>(ctx.app, "select last_login_at from users where id = $1", [user.id])
    )[0]!
    expect(res.json).toEqual({
      user_id: user.id,
      email: user.email,
      email_verified: true,
      name: "Ada",
      avatar_url: null,
      locale: null,
      timezone: null,
      status: "active",
      created_at: user.created_at.toISOString(),
      last_login_at: stored.last_login_at === null ? null : stored.last_login_at.toISOString(),
    })
  })

  it("Bearer access token only: none is 401 unauthorized, an ID token or a cookie is refused", async () => {
    const { tokens } = await signedInUser(ctx, "idtoken")
    const none = await me(ctx, undefined, "")
    expectProblem(none, 401, "unauthorized")
    expect(none.headers["www-authenticate"]).toBe('Bearer realm="me"')
    expectProblem(await me(ctx, undefined, "", { headers: { cookie: "authservice_login=x" } }), 401, "unauthorized")
    expectProblem(await me(ctx, tokens.id_token, ""), 401, "invalid_token")
    expectProblem(await me(ctx, tokens.id_token, "", { method: "PATCH", body: { name: "x" } }), 401, "invalid_token")
  })

  it("CORS: a registered Origin gets the CORS headers, another 403 origin_not_allowed", async () => {
    const { token } = await signedInUser(ctx, "cors")
    const ok = await me(ctx, token, "", { headers: { origin: "https://app.example.com" } })
    expect(ok.status).toBe(200)
    expect(ok.headers["access-control-allow-origin"]).toBe("https://app.example.com")
    expectProblem(
      await me(ctx, token, "", { headers: { origin: "https://evil.example.com" } }),
      403,
      "origin_not_allowed",
    )
    const preflight = await ctx.app.request(ctx.b.interaction_domain, "/v1/me", {
      method: "OPTIONS",
      headers: { origin: "https://app.example.com", "access-control-request-method": "PATCH" },
    })
    expect(preflight.status).toBe(204)
    expect(String(preflight.headers["access-control-allow-methods"])).toContain("PATCH")
  })
})

describe("PATCH /me", () => {
  it("changes name, avatar_url, locale, timezone (stored canonical); user.updated lists the changed fields", async () => {
    const { user, token } = await signedInUser(ctx, "patch", { name: "Old" })
    const res = await me(ctx, token, "", {
      method: "PATCH",
      body: { name: "New", avatar_url: "https://cdn.example.com/a.png", locale: "en-gb", timezone: "europe/paris" },
    })
    expect(res.status, res.text).toBe(200)
    expect(res.json).toMatchObject({
      user_id: user.id,
      name: "New",
      avatar_url: "https://cdn.example.com/a.png",
      locale: "en-GB",
      timezone: "Europe/Paris",
    })
    expect((await me(ctx, token, "")).json).toEqual(res.json)
    const events = await userEvents(ctx, "user.updated", user.id)
    expect(events).toHaveLength(1)
    expect(events[0].payload).toEqual({ userId: user.id, changedFields: ["name", "avatar_url", "locale", "timezone"] })
    expect(events[0].actor).toEqual({ type: "end_user", id: user.id })
    expect(events[0].environmentId).toBe(ctx.b.environment_id)

    // null clears; only what changes is reported; a PATCH changing nothing emits nothing
    const cleared = await me(ctx, token, "", { method: "PATCH", body: { name: "New", avatar_url: null } })
    expect(cleared.json).toMatchObject({ name: "New", avatar_url: null })
    const again = await me(ctx, token, "", { method: "PATCH", body: { locale: "en-GB" } })
    expect(again.status).toBe(200)
    expect((await userEvents(ctx, "user.updated", user.id)).map((e) => e.payload.changedFields)).toEqual([
      ["name", "avatar_url", "locale", "timezone"],
      ["avatar_url"],
    ])
  })

  it("email is refused with a clear 400 naming the email change routes; nothing changes", async () => {
    const { user, token } = await signedInUser(ctx, "patch-email", { name: "Keep" })
    const res = await me(ctx, token, "", { method: "PATCH", body: { email: "other@example.com", name: "Changed" } })
    expectProblem(res, 400, "invalid_request")
    expect(res.json.detail).toContain("/me/email/change/start")
    const row = (
      await query<{ email: string; name: string }>(ctx.app, "select email, name from users where id = $1", [user.id])
    )[0]!
    expect(row).toEqual({ email: user.email, name: "Keep" })
    expect(await userEvents(ctx, "user.updated", user.id)).toEqual([])
  })

  it("bad bodies: shape 400 invalid_request_body, broken rule 400 invalid_request, empty 400; nothing changes", async () => {
    const { user, token } = await signedInUser(ctx, "patch-bad", { name: "Same" })
    expectProblem(await me(ctx, token, "", { method: "PATCH", body: "{not json" }), 400, "invalid_request_body")
    expectProblem(await me(ctx, token, "", { method: "PATCH", body: { name: 42 } }), 400, "invalid_request_body")
    expectProblem(
      await me(ctx, token, "", { method: "PATCH", body: { status: "blocked" } }),
      400,
      "invalid_request_body",
    )
    expectProblem(await me(ctx, token, "", { method: "PATCH", body: { metadata: {} } }), 400, "invalid_request_body")
    expectProblem(await me(ctx, token, "", { method: "PATCH", body: { timezone: "+02:00" } }), 400, "invalid_request")
    expectProblem(
      await me(ctx, token, "", { method: "PATCH", body: { avatar_url: "javascript:alert(1)" } }),
      400,
      "invalid_request",
    )
    expectProblem(await me(ctx, token, "", { method: "PATCH", body: { name: "" } }), 400, "invalid_request")
    expectProblem(await me(ctx, token, "", { method: "PATCH", body: {} }), 400, "invalid_request")
    expect((await query<{ name: string }>(ctx.app, "select name from users where id = $1", [user.id]))[0]!.name).toBe(
      "Same",
    )
    expect(await userEvents(ctx, "user.updated", user.id)).toEqual([])
  })

  it("race: two concurrent PATCHes both apply, one after the other (the row is locked)", async () => {
    const { user, token } = await signedInUser(ctx, "patch-race")
    const [a, b] = await Promise.all([
      me(ctx, token, "", { method: "PATCH", body: { name: "A" } }),
      me(ctx, token, "", { method: "PATCH", body: { locale: "fr" } }),
    ])
    expect([a.status, b.status]).toEqual([200, 200])
    expect((await me(ctx, token, "")).json).toMatchObject({ name: "A", locale: "fr" })
    expect((await userEvents(ctx, "user.updated", user.id)).map((e) => e.payload.changedFields).sort()).toEqual([
      ["locale"],
      ["name"],
    ])
  })
})

describe("DELETE /me (fresh session)", () => {
  it("moves the user to pending_deletion; every session and refresh family revoked; user.deleted user_request; tokens dead", async () => {
    const { user, token, tokens, sid } = await signedInUser(ctx, "delete")
    const other = await signIn(ctx, user)
    const res = await me(ctx, token, "", { method: "DELETE" })
    expect(res.status, res.text).toBe(200)
    expect(res.json).toEqual({ user_id: user.id, status: "pending_deletion" })
    const row = (
      await query<{ status: string; security_version: number; deleted_at: Date | null }>(
        ctx.app,
        "select status, security_version, deleted_at from users where id = $1",
        [user.id],
      )
    )[0]!
    expect(row.status).toBe("pending_deletion")
    expect(row.security_version).toBe(user.security_version + 1)
    expect(row.deleted_at).not.toBeNull()

    const deleted = await userEvents(ctx, "user.deleted", user.id)
    expect(deleted.map((e) => e.payload)).toEqual([{ userId: user.id, reason: "user_request" }])
    expect(deleted[0].actor).toEqual({ type: "end_user", id: user.id })
    const revoked = await userEvents(ctx, "session.revoked", user.id)
    expect(revoked.map((e) => e.payload).sort((x, y) => x.sessionId.localeCompare(y.sessionId))).toEqual(
      [sid, other.sid].sort().map((sessionId) => ({ userId: user.id, sessionId, reason: "user_logout" })),
    )
    expect(
      await count(ctx.app, "select count(*) as n from login_sessions where user_id = $1 and revoked_at is null", [
        user.id,
      ]),
    ).toBe(0)
    expect(
      await count(ctx.app, "select count(*) as n from refresh_families where user_id = $1 and revoked_at is null", [
        user.id,
      ]),
    ).toBe(0)

    expectProblem(await me(ctx, token, ""), 401, "invalid_token")
    expect((await userinfo(ctx, other.tokens.access_token)).status).toBe(401)
    expect((await introspect(ctx, token)).json).toEqual({ active: false })
    const refresh = await tryRefresh(ctx, tokens.refresh_token)
    expect(refresh.status).toBe(400)
    expect(refresh.json.error).toBe("invalid_grant")
  })

  it("a session signed in more than 5 minutes ago (even with a refreshed token): 403 reauthentication_required, nothing changes", async () => {
    const { user, tokens } = await signedInUser(ctx, "delete-stale")
    await ctx.app.advance("5 minutes")
    await ctx.app.advance("1 second")
    const refreshed = await tryRefresh(ctx, tokens.refresh_token)
    expect(refreshed.status, refreshed.text).toBe(200)
    const res = await me(ctx, refreshed.json.access_token, "", { method: "DELETE" })
    expectProblem(res, 403, "reauthentication_required")
    expect(res.json.detail).toContain("sign in again")
    expect(
      (await query<{ status: string }>(ctx.app, "select status from users where id = $1", [user.id]))[0]!.status,
    ).toBe("active")
    expect(await userEvents(ctx, "user.deleted", user.id)).toEqual([])
    expect(await userEvents(ctx, "session.revoked", user.id)).toEqual([])
    expect((await me(ctx, refreshed.json.access_token, "")).status).toBe(200)
  })

  it("exactly 5 minutes after sign-in is still fresh (a refreshed token keeps auth_time)", async () => {
    const { user, tokens } = await signedInUser(ctx, "delete-edge")
    await ctx.app.advance("5 minutes")
    const refreshed = await tryRefresh(ctx, tokens.refresh_token)
    expect(refreshed.status, refreshed.text).toBe(200)
    const res = await me(ctx, refreshed.json.access_token, "", { method: "DELETE" })
    expect(res.status, res.text).toBe(200)
    expect(await userEvents(ctx, "user.deleted", user.id)).toHaveLength(1)
  })

  it("race: two concurrent deletions give one pending_deletion and one user.deleted", async () => {
    const { user } = await signedInUser(ctx, "delete-race")
    const a = await signIn(ctx, user)
    const b = await signIn(ctx, user)
    const answers = await Promise.all([
      me(ctx, a.tokens.access_token, "", { method: "DELETE" }),
      me(ctx, b.tokens.access_token, "", { method: "DELETE" }),
    ])
    // The loser either finds the user already pending deletion under the row lock (200, no
    // second event) or arrives after the commit, when its token is dead (401).
    expect(answers.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(1)
    for (const r of answers) expect([200, 401], r.text).toContain(r.status)
    expect(await userEvents(ctx, "user.deleted", user.id)).toHaveLength(1)
  })
})

describe("503 user_unavailable", () => {
  it("the token's user and session cannot be read: 503 with Retry-After", async () => {
    const { user, token } = await signedInUser(ctx, "unavailable-auth")
    // The sign-in left this state in the replica's memory (the code exchange read it): a local
    // change of the user makes the next reads go to Postgres, which then fails.
    liveStateChanged(ctx.b.environment_id, user.id)
    await query(ctx.app, "alter table login_sessions rename to login_sessions_away")
    try {
      for (const [method, body] of [
        ["GET", undefined],
        ["PATCH", { name: "x" }],
        ["DELETE", undefined],
      ] as const) {
        const res = await me(ctx, token, "", { method, ...(body ? { body } : {}) })
        expectProblem(res, 503, "user_unavailable")
        expect(res.headers["retry-after"]).toBe("1")
      }
    } finally {
      await query(ctx.app, "alter table login_sessions_away rename to login_sessions")
    }
    expect((await me(ctx, token, "")).status).toBe(200)
  })

  it("a cross-origin call whose client cannot be read (the CORS check): 503 with Retry-After", async () => {
    const { token } = await signedInUser(ctx, "unavailable-cors")
    // Injected failure: the token's client row cannot be read (the Environment-wide Origin
    // check before it reads other columns and still passes).
    await query(ctx.app, "alter table clients rename column allowed_scopes to allowed_scopes_away")
    try {
      const res = await me(ctx, token, "", { headers: { origin: "https://app.example.com" } })
      expectProblem(res, 503, "user_unavailable")
      expect(res.headers["retry-after"]).toBe("1")
    } finally {
      await query(ctx.app, "alter table clients rename column allowed_scopes_away to allowed_scopes")
    }
    expect((await me(ctx, token, "", { headers: { origin: "https://app.example.com" } })).status).toBe(200)
  })

  it("the database fails inside PATCH or DELETE (after the token check): 503, the transaction rolls back", async () => {
    const { user, token } = await signedInUser(ctx, "unavailable-write", { name: "Before" })
    // Injected failure: the outbox table goes away, so the write's transaction cannot finish.
    await query(ctx.app, "alter table event_outbox rename to event_outbox_away")
    try {
      const patch = await me(ctx, token, "", { method: "PATCH", body: { name: "After" } })
      expectProblem(patch, 503, "user_unavailable")
      expect(patch.headers["retry-after"]).toBe("1")
      expectProblem(await me(ctx, token, "", { method: "DELETE" }), 503, "user_unavailable")
    } finally {
      await query(ctx.app, "alter table event_outbox_away rename to event_outbox")
    }
    const row = (
      await query<{ name: string; status: string }>(ctx.app, "select name, status from users where id = $1", [user.id])
    )[0]!
    expect(row).toEqual({ name: "Before", status: "active" })
    expect(
      await count(ctx.app, "select count(*) as n from login_sessions where user_id = $1 and revoked_at is null", [
        user.id,
      ]),
    ).toBe(1)
    expect((await me(ctx, token, "")).status).toBe(200)
  })
})
