import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../../support/app.js"
import { query, snapshot } from "../support/db.js"
import { expectProblem } from "../support/problem.js"
import { environmentAuditRows, environmentEvents } from "../support/records.js"
import { seedIdentity, seedPasskey, seedSession } from "../support/seed.js"

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
const newUser = async () => {
  const res = await app.management("/v1/users", {
    method: "POST",
    body: { environment_id: a.environment_id, email: `sub${++n}@example.com` },
  })
  return res.json.id as string
}
const at = (path: string) => `${path}${path.includes("?") ? "&" : "?"}environment_id=${a.environment_id}`
const call = (method: string, path: string, opts: { headers?: Record<string, string> } = {}) =>
  app.management(at(path), { method, ...opts })
const owner = (userId: string) => ({ workspaceId: a.workspace_id, environmentId: a.environment_id, userId })

describe("identities", () => {
  it("lists linked identities with keyset pages; never the provider subject", async () => {
    const userId = await newUser()
    const ids = [] as Array<string>
    for (let i = 0; i < 3; i++)
      ids.push(await seedIdentity(app, { ...owner(userId), provider: i === 0 ? "github" : "google" }))
    const other = await newUser()
    await seedIdentity(app, owner(other))
    const page1 = await call("GET", `/v1/users/${userId}/identities?limit=2`)
    expect(page1.status).toBe(200)
    expect(page1.json.data).toHaveLength(2)
    const page2 = await call("GET", `/v1/users/${userId}/identities?limit=2&cursor=${page1.json.next_cursor}`)
    expect(page2.json.next_cursor).toBeNull()
    const all = [...page1.json.data, ...page2.json.data]
    expect(all.map((i: { identity_id: string }) => i.identity_id)).toEqual([...ids].sort())
    expect(all[0]).toEqual({
      identity_id: expect.stringMatching(/^idn_/),
      user_id: userId,
      provider: expect.any(String),
      connection_id: null,
      email: "someone@gmail.example",
      linked_at: expect.any(String),
      last_used_at: null,
    })
    expect(JSON.stringify(all)).not.toContain("sub-idn_")
  })

  it("unlinks an identity: identity.unlinked with its provider, audited; a second unlink is 404 identity_not_found", async () => {
    const userId = await newUser()
    const id = await seedIdentity(app, { ...owner(userId), provider: "github" })
    const res = await call("DELETE", `/v1/users/${userId}/identities/${id}`)
    expect(res.status).toBe(200)
    expect(res.json).toEqual({ identity_id: id, user_id: userId, unlinked: true })
    expect(await query(app, "select id from identities where id = $1", [id])).toHaveLength(0)
    const unlinked = (await environmentEvents(app, a.environment_id, "identity.unlinked")).filter(
      (e) => e.payload.userId === userId,
    )
    expect(unlinked.map((e) => e.payload)).toEqual([{ userId, identityId: id, provider: "github" }])
    expect(
      (await environmentAuditRows(app, a.environment_id, "identity.unlinked")).filter((r) => r.subject_id === id),
    ).toHaveLength(1)
    const before = await snapshot(app, a.environment_id)
    expectProblem(await call("DELETE", `/v1/users/${userId}/identities/${id}`), 404, "identity_not_found")
    expect(await snapshot(app, a.environment_id)).toEqual(before)
  })

  it("an identity of another user cannot be unlinked through this user (404) and stays", async () => {
    const userId = await newUser()
    const other = await newUser()
    const id = await seedIdentity(app, owner(other))
    expectProblem(await call("DELETE", `/v1/users/${userId}/identities/${id}`), 404, "identity_not_found")
    expect(await query(app, "select id from identities where id = $1", [id])).toHaveLength(1)
  })

  it("the administrator may remove the last method (no last-factor rule for admin deletes)", async () => {
    const userId = await newUser() // email not verified: the identity is the only method
    const id = await seedIdentity(app, owner(userId))
    expect((await call("DELETE", `/v1/users/${userId}/identities/${id}`)).status).toBe(200)
  })
})

describe("passkeys", () => {
  it("lists passkey summaries without credential id, public key or sign count", async () => {
    const userId = await newUser()
    const pk = await seedPasskey(app, owner(userId))
    const res = await call("GET", `/v1/users/${userId}/passkeys`)
    expect(res.status).toBe(200)
    expect(res.json).toEqual({
      data: [
        {
          passkey_id: pk.id,
          user_id: userId,
          name: "My laptop",
          aaguid: "00000000-0000-0000-0000-000000000000",
          device_type: "multiDevice",
          backed_up: true,
          rp_id: "localhost",
          created_at: expect.any(String),
          last_used_at: null,
        },
      ],
      next_cursor: null,
    })
    expect(res.text).not.toContain(pk.credentialId)
    expect(res.text).not.toContain(Buffer.from("public-key-bytes").toString("base64"))
    expect(res.text).not.toMatch(/credential|public_key|sign_count|user_handle/)
  })

  it("deletes a passkey: passkey.deleted, audited; unknown or another user's is 404 passkey_not_found", async () => {
    const userId = await newUser()
    const other = await newUser()
    const pk = await seedPasskey(app, owner(userId))
    const foreign = await seedPasskey(app, owner(other))
    expectProblem(await call("DELETE", `/v1/users/${userId}/passkeys/${foreign.id}`), 404, "passkey_not_found")
    const res = await call("DELETE", `/v1/users/${userId}/passkeys/${pk.id}`)
    expect(res.json).toEqual({ passkey_id: pk.id, user_id: userId, deleted: true })
    const deleted = (await environmentEvents(app, a.environment_id, "passkey.deleted")).filter(
      (e) => e.payload.userId === userId,
    )
    expect(deleted.map((e) => e.payload)).toEqual([{ userId, passkeyId: pk.id }])
    expect(
      (await environmentAuditRows(app, a.environment_id, "passkey.deleted")).filter((r) => r.subject_id === pk.id),
    ).toHaveLength(1)
    expectProblem(await call("DELETE", `/v1/users/${userId}/passkeys/${pk.id}`), 404, "passkey_not_found")
    expect(await query(app, "select id from passkeys where id = $1", [foreign.id])).toHaveLength(1)
  })

  it("concurrent deletes of one passkey: one 200, one 404, one event", async () => {
    const userId = await newUser()
    const pk = await seedPasskey(app, owner(userId))
    const results = await Promise.all([1, 2].map(() => call("DELETE", `/v1/users/${userId}/passkeys/${pk.id}`)))
    expect(results.map((r) => r.status).sort()).toEqual([200, 404])
    expect(
      (await environmentEvents(app, a.environment_id, "passkey.deleted")).filter((e) => e.payload.passkeyId === pk.id),
    ).toHaveLength(1)
  })
})

describe("sessions", () => {
  it("lists live sessions only (not revoked, not expired)", async () => {
    const userId = await newUser()
    const live = await seedSession(app, owner(userId))
    const revoked = await seedSession(app, owner(userId))
    await query(app, "update login_sessions set revoked_at = $2, revoked_reason = 'user_logout' where id = $1", [
      revoked,
      new Date(app.now()),
    ])
    const idle = await seedSession(app, owner(userId))
    await query(app, "update login_sessions set idle_expires_at = $2 where id = $1", [idle, new Date(app.now() - 1000)])
    const res = await call("GET", `/v1/users/${userId}/sessions`)
    expect(res.status).toBe(200)
    expect(res.json.data.map((s: { session_id: string }) => s.session_id)).toEqual([live])
    expect(res.json.data[0]).toEqual({
      session_id: live,
      user_id: userId,
      client_id: null,
      device_name: expect.any(String),
      method: "email_otp",
      acr: "urn:example-auth:loa:basic",
      auth_time: expect.any(String),
      created_at: expect.any(String),
      last_active_at: expect.any(String),
      idle_expires_at: expect.any(String),
      absolute_expires_at: expect.any(String),
    })
    await app.advance("8 days")
    expect((await call("GET", `/v1/users/${userId}/sessions`)).json.data).toEqual([])
  })

  it("revokes one session: session.revoked admin_revocation, audited; it leaves the list; revoking it again changes nothing", async () => {
    const userId = await newUser()
    const s1 = await seedSession(app, owner(userId))
    const s2 = await seedSession(app, owner(userId))
    const res = await call("DELETE", `/v1/users/${userId}/sessions/${s1}`)
    expect(res.status).toBe(200)
    expect(res.json).toEqual({ session_id: s1, user_id: userId, revoked: true })
    const [row] = await query(app, "select revoked_at, revoked_reason from login_sessions where id = $1", [s1])
    expect(row).toMatchObject({ revoked_at: expect.any(Date), revoked_reason: "admin_revocation" })
    expect(
      (await call("GET", `/v1/users/${userId}/sessions`)).json.data.map((s: { session_id: string }) => s.session_id),
    ).toEqual([s2])
    const before = await snapshot(app, a.environment_id)
    expect((await call("DELETE", `/v1/users/${userId}/sessions/${s1}`)).status).toBe(200)
    expect(await snapshot(app, a.environment_id)).toEqual(before)
    const revoked = (await environmentEvents(app, a.environment_id, "session.revoked")).filter(
      (e) => e.payload.userId === userId,
    )
    expect(revoked.map((e) => e.payload)).toEqual([{ userId, sessionId: s1, reason: "admin_revocation" }])
    expect(
      (await environmentAuditRows(app, a.environment_id, "session.revoked")).filter((r) => r.subject_id === s1),
    ).toHaveLength(1)
  })

  it("a session of another user, or unknown, is 404 session_not_found and stays live", async () => {
    const userId = await newUser()
    const other = await newUser()
    const foreign = await seedSession(app, owner(other))
    expectProblem(await call("DELETE", `/v1/users/${userId}/sessions/${foreign}`), 404, "session_not_found")
    expectProblem(
      await call("DELETE", `/v1/users/${userId}/sessions/ses_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa`),
      404,
      "session_not_found",
    )
    const [row] = await query(app, "select revoked_at from login_sessions where id = $1", [foreign])
    expect(row!.revoked_at).toBeNull()
  })

  it("revokes all live sessions: one session.revoked each, audited once; concurrent calls revoke each session once", async () => {
    const userId = await newUser()
    const ids = [
      await seedSession(app, owner(userId)),
      await seedSession(app, owner(userId)),
      await seedSession(app, owner(userId)),
    ]
    const other = await newUser()
    const untouched = await seedSession(app, owner(other))
    const results = await Promise.all([1, 2].map(() => call("DELETE", `/v1/users/${userId}/sessions`)))
    expect(results.map((r) => r.status)).toEqual([200, 200])
    expect(results.map((r) => r.json.revoked_count).sort()).toEqual([0, 3])
    expect(results[0]!.json).toMatchObject({ user_id: userId, revoked: true })
    const revoked = (await environmentEvents(app, a.environment_id, "session.revoked")).filter(
      (e) => e.payload.userId === userId,
    )
    expect(revoked.map((e) => e.payload.sessionId).sort()).toEqual([...ids].sort())
    expect(revoked.every((e) => e.payload.reason === "admin_revocation")).toBe(true)
    expect((await call("GET", `/v1/users/${userId}/sessions`)).json.data).toEqual([])
    const [row] = await query(app, "select revoked_at from login_sessions where id = $1", [untouched])
    expect(row!.revoked_at).toBeNull()
    expect(
      (await environmentAuditRows(app, a.environment_id, "user.sessions_revoked")).filter(
        (r) => r.subject_id === userId,
      ),
    ).toHaveLength(2)
  })

  it("sub-resource routes of an unknown user are 404 user_not_found", async () => {
    for (const [method, path] of [
      ["GET", "identities"],
      ["GET", "passkeys"],
      ["GET", "sessions"],
      ["DELETE", "sessions"],
      ["DELETE", "identities/idn_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"],
      ["DELETE", "passkeys/psk_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"],
      ["DELETE", "sessions/ses_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"],
    ] as const) {
      expectProblem(await call(method, `/v1/users/usr_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/${path}`), 404, "user_not_found")
    }
  })

  it("Idempotency-Key on sub-resource deletes replays; the same key on another session conflicts", async () => {
    const userId = await newUser()
    const s1 = await seedSession(app, owner(userId))
    const s2 = await seedSession(app, owner(userId))
    const headers = { "idempotency-key": `revoke-${s1}` }
    const first = await call("DELETE", `/v1/users/${userId}/sessions/${s1}`, { headers })
    const replay = await call("DELETE", `/v1/users/${userId}/sessions/${s1}`, { headers })
    expect(replay.json).toEqual(first.json)
    expect(replay.headers["idempotent-replayed"]).toBe("true")
    expectProblem(
      await call("DELETE", `/v1/users/${userId}/sessions/${s2}`, { headers }),
      409,
      "idempotency_key_conflict",
    )
    const [row] = await query(app, "select revoked_at from login_sessions where id = $1", [s2])
    expect(row!.revoked_at).toBeNull()
  })
})
