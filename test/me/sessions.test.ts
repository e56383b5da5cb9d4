import { describe, expect, it } from "vitest"
import {
  count,
  expectProblem,
  introspect,
  me,
  query,
  randomId,
  signIn,
  signedInUser,
  tryRefresh,
  useMeApp,
  userEvents,
  userinfo,
  withTableAway,
} from "./support.js"

// GET /me/sessions, DELETE /me/sessions/{sessionId}, DELETE /me/sessions (spec: Self-service
// /me; Session summary; /me rule 5; Events: session.revoked reason user_logout).

const ctx = useMeApp()

const SESSION_FIELDS = [
  "absolute_expires_at",
  "acr",
  "auth_time",
  "client_id",
  "created_at",
  "current",
  "device_name",
  "idle_expires_at",
  "last_active_at",
  "method",
  "session_id",
  "user_id",
]

describe("GET /me/sessions", () => {
  it("lists the user's live sessions with the current-session flag from the token's sid", async () => {
    const first = await signedInUser(ctx, "list")
    const second = await signIn(ctx, first.user)
    const revoked = await signIn(ctx, first.user)
    await query(ctx.app, "update login_sessions set revoked_at = now(), revoked_reason = 'user_logout' where id = $1", [
      revoked.sid,
    ])
    await signedInUser(ctx, "someone-else")

    const res = await me(ctx, second.tokens.access_token, "/sessions")
    expect(res.status, res.text).toBe(200)
    expect(res.json.next_cursor).toBeNull()
    expect(res.json.data.map((s: { session_id: string }) => s.session_id)).toEqual([first.sid, second.sid].sort())
    for (const s of res.json.data) {
      expect(Object.keys(s).sort()).toEqual(SESSION_FIELDS)
      expect(s).toMatchObject({
        user_id: first.user.id,
        client_id: ctx.client.client_id,
        method: "email_otp",
        current: s.session_id === second.sid,
      })
    }
    const fromFirst = await me(ctx, first.token, "/sessions")
    expect(
      fromFirst.json.data
        .filter((s: { current: boolean }) => s.current)
        .map((s: { session_id: string }) => s.session_id),
    ).toEqual([first.sid])
  })

  it("pages by keyset; a bad limit is 400 invalid_request", async () => {
    const { user, token } = await signedInUser(ctx, "pages")
    await signIn(ctx, user)
    await signIn(ctx, user)
    const one = await me(ctx, token, "/sessions?limit=2")
    expect(one.json.data).toHaveLength(2)
    const two = await me(ctx, token, `/sessions?limit=2&cursor=${one.json.next_cursor}`)
    expect(two.json.data).toHaveLength(1)
    expect(two.json.next_cursor).toBeNull()
    expectProblem(await me(ctx, token, "/sessions?limit=101"), 400, "invalid_request")
  })

  it("503 user_unavailable when the sessions cannot be read", async () => {
    const { token } = await signedInUser(ctx, "unavailable")
    // The token check does not read device_name; the list does.
    await query(ctx.app, "alter table login_sessions rename column device_name to device_name_away")
    try {
      const res = await me(ctx, token, "/sessions")
      expectProblem(res, 503, "user_unavailable")
      expect(res.headers["retry-after"]).toBe("1")
    } finally {
      await query(ctx.app, "alter table login_sessions rename column device_name_away to device_name")
    }
    expect((await me(ctx, token, "/sessions")).status).toBe(200)
  })
})

describe("DELETE /me/sessions/{sessionId}", () => {
  it("revokes another session of mine: its tokens and refresh family end; session.revoked user_logout; mine still works", async () => {
    const mine = await signedInUser(ctx, "revoke-one")
    const other = await signIn(ctx, mine.user)
    const res = await me(ctx, mine.token, `/sessions/${other.sid}`, { method: "DELETE" })
    expect(res.status, res.text).toBe(200)
    expect(res.json).toEqual({ session_id: other.sid, revoked: true })
    const events = await userEvents(ctx, "session.revoked", mine.user.id)
    expect(events.map((e) => e.payload)).toEqual([
      { userId: mine.user.id, sessionId: other.sid, reason: "user_logout" },
    ])
    expect(events[0].actor).toEqual({ type: "end_user", id: mine.user.id })
    expectProblem(await me(ctx, other.tokens.access_token, ""), 401, "invalid_token")
    expect((await userinfo(ctx, other.tokens.access_token)).status).toBe(401)
    expect((await introspect(ctx, other.tokens.access_token)).json).toEqual({ active: false })
    expect((await tryRefresh(ctx, other.tokens.refresh_token)).json.error).toBe("invalid_grant")
    expect(
      await count(ctx.app, "select count(*) as n from refresh_families where session_id = $1 and revoked_at is null", [
        other.sid,
      ]),
    ).toBe(0)
    expect((await me(ctx, mine.token, "")).status).toBe(200)
    expect((await me(ctx, mine.token, "/sessions")).json.data.map((s: { session_id: string }) => s.session_id)).toEqual(
      [mine.sid],
    )

    // Again: the session already ended, same answer, no second event.
    expect((await me(ctx, mine.token, `/sessions/${other.sid}`, { method: "DELETE" })).json).toEqual({
      session_id: other.sid,
      revoked: true,
    })
    expect(await userEvents(ctx, "session.revoked", mine.user.id)).toHaveLength(1)
  })

  it("revoking the current session makes later calls 401 (rule 5)", async () => {
    const { token, sid, user } = await signedInUser(ctx, "revoke-current")
    expect((await me(ctx, token, `/sessions/${sid}`, { method: "DELETE" })).status).toBe(200)
    expectProblem(await me(ctx, token, ""), 401, "invalid_token")
    expect((await userEvents(ctx, "session.revoked", user.id)).map((e) => e.payload.sessionId)).toEqual([sid])
  })

  it("unknown or another user's session: 404 session_not_found, nothing revoked", async () => {
    const mine = await signedInUser(ctx, "not-found")
    const stranger = await signedInUser(ctx, "stranger")
    for (const id of [randomId("ses"), "nope", stranger.sid]) {
      expectProblem(await me(ctx, mine.token, `/sessions/${id}`, { method: "DELETE" }), 404, "session_not_found")
    }
    expect((await me(ctx, stranger.token, "")).status).toBe(200)
    expect(await userEvents(ctx, "session.revoked", stranger.user.id)).toEqual([])
  })
})

describe("DELETE /me/sessions", () => {
  it("revokes every live session of mine, the current one included: {revoked: true}, one event each", async () => {
    const mine = await signedInUser(ctx, "revoke-all")
    const other = await signIn(ctx, mine.user)
    const stranger = await signedInUser(ctx, "untouched")
    const res = await me(ctx, mine.token, "/sessions", { method: "DELETE" })
    expect(res.status, res.text).toBe(200)
    expect(res.json).toEqual({ revoked: true })
    const events = await userEvents(ctx, "session.revoked", mine.user.id)
    expect(events.map((e) => e.payload).sort((a, b) => a.sessionId.localeCompare(b.sessionId))).toEqual(
      [mine.sid, other.sid].sort().map((sessionId) => ({ userId: mine.user.id, sessionId, reason: "user_logout" })),
    )
    expectProblem(await me(ctx, mine.token, "/sessions"), 401, "invalid_token")
    expectProblem(await me(ctx, other.tokens.access_token, ""), 401, "invalid_token")
    expect((await tryRefresh(ctx, mine.tokens.refresh_token)).json.error).toBe("invalid_grant")
    expect(
      await count(ctx.app, "select count(*) as n from refresh_families where user_id = $1 and revoked_at is null", [
        mine.user.id,
      ]),
    ).toBe(0)
    expect((await me(ctx, stranger.token, "")).status).toBe(200)
  })

  it("race: revoke-all and a refresh at once: afterwards no live session or family remains", async () => {
    const mine = await signedInUser(ctx, "race")
    const [revoked, refreshed] = await Promise.all([
      me(ctx, mine.token, "/sessions", { method: "DELETE" }),
      tryRefresh(ctx, mine.tokens.refresh_token),
    ])
    expect(revoked.status, revoked.text).toBe(200)
    expect([200, 400]).toContain(refreshed.status)
    if (refreshed.status === 200) expectProblem(await me(ctx, refreshed.json.access_token, ""), 401, "invalid_token")
    expect(
      await count(ctx.app, "select count(*) as n from login_sessions where user_id = $1 and revoked_at is null", [
        mine.user.id,
      ]),
    ).toBe(0)
    expect(
      await count(ctx.app, "select count(*) as n from refresh_families where user_id = $1 and revoked_at is null", [
        mine.user.id,
      ]),
    ).toBe(0)
  })
})

describe("503 user_unavailable when a revocation cannot be written", () => {
  it("DELETE /me/sessions/{sessionId} and DELETE /me/sessions: 503 with Retry-After; nothing is revoked", async () => {
    const mine = await signedInUser(ctx, "unavailable-revoke")
    const other = await signIn(ctx, mine.user)
    // Injected failure after the token check: the outbox cannot take session.revoked.
    const [one, all] = await withTableAway(ctx, "event_outbox", async () => [
      await me(ctx, mine.token, `/sessions/${other.sid}`, { method: "DELETE" }),
      await me(ctx, mine.token, "/sessions", { method: "DELETE" }),
    ])
    for (const res of [one!, all!]) {
      expectProblem(res, 503, "user_unavailable")
      expect(res.headers["retry-after"]).toBe("1")
    }
    expect(
      await count(ctx.app, "select count(*) as n from login_sessions where user_id = $1 and revoked_at is null", [
        mine.user.id,
      ]),
    ).toBe(2)
    expect(
      await count(ctx.app, "select count(*) as n from refresh_families where user_id = $1 and revoked_at is null", [
        mine.user.id,
      ]),
    ).toBe(2)
    expect(await userEvents(ctx, "session.revoked", mine.user.id)).toEqual([])
    expect((await me(ctx, other.tokens.access_token, "")).status).toBe(200)
  })
})
