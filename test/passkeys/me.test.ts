import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { liveStateChanged } from "../../src/platform/live-state-changes.js"
import { Users } from "../../src/users/service.js"
import type { UserRow } from "../../src/users/repo.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import type { RequestOptions } from "../support/http.js"
import { SoftwareAuthenticator } from "./support/authenticator.js"
import {
  ALLOWED_ORIGIN,
  completeAndExchange,
  type FlowClient,
  refreshTokens,
  registerClient,
  startTransaction,
} from "./support/flow.js"
import { count, createUser, eventsOf, expectProblem, query, randomId } from "./support/helpers.js"
import { createConnection } from "../social/support.js"

// Self-service /me: Bearer authentication (spec, Authentication: /me row; /me rule 7) and
// the passkey routes (rules 1, 4, 6; docs/architecture.md: last factor).

let app: TestApp
let b: Bootstrapped
let client: FlowClient
let origin: string
const RESOURCE = "https://api.example.com"

beforeAll(async () => {
  app = await startApp()
  b = await app.bootstrap()
  client = await registerClient(app, b, { allowed_resources: [RESOURCE] })
  origin = `http://${b.interaction_domain}`
})
afterAll(async () => {
  await app?.close()
})

/** Tokens for `user` from a real code exchange (the transaction is marked authenticated as Email OTP leaves it). */
const signIn = async (user: UserRow, extra: { scope?: string; resource?: ReadonlyArray<string> } = {}) => {
  const txn = await startTransaction(app, b, client, extra)
  await query(
    app,
    `update auth_transactions set status = 'authenticated', method = 'email_otp', user_id = $2, authenticated_at = $3
    where id = $1`,
    [txn.id, user.id, new Date(app.now())],
  )
  return completeAndExchange(app, b, client, txn)
}

const me = (token: string | undefined, path: string, options: RequestOptions = {}) =>
  app.request(b.interaction_domain, `/v1/me${path}`, {
    ...options,
    headers: { ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...options.headers },
  })

/** A user, signed in, with `n` passkeys registered through /me. */
const withPasskeys = async (email: string, n: number, options: { emailVerified?: boolean } = {}) => {
  const user = await createUser(app, b, email)
  if (options.emailVerified === false)
    await query(app, "update users set email_verified = false where id = $1", [user.id])
  const { tokens } = await signIn(user)
  const authenticator = new SoftwareAuthenticator()
  const ids: Array<string> = []
  for (let i = 0; i < n; i++) {
    const opts = await me(tokens.access_token, "/passkeys/registration/options", { method: "POST" })
    expect(opts.status, opts.text).toBe(200)
    const res = await me(tokens.access_token, "/passkeys/registration/verify", {
      body: { credential: authenticator.create(opts.json, { origin }), name: `key ${i}` },
    })
    expect(res.status, res.text).toBe(200)
    ids.push(res.json.passkey_id)
  }
  return { user, token: tokens.access_token, tokens, authenticator, ids }
}

describe("/me Bearer authentication", () => {
  it("no Authorization header, another scheme, or only a cookie: 401 unauthorized with a Bearer challenge", async () => {
    const res = await me(undefined, "/passkeys")
    expectProblem(res, 401, "unauthorized")
    expect(res.headers["www-authenticate"]).toBe('Bearer realm="me"')
    expectProblem(
      await me(undefined, "/passkeys", { headers: { authorization: "Basic dXNlcjpwYXNz" } }),
      401,
      "unauthorized",
    )
    expectProblem(
      await me(undefined, "/passkeys", { headers: { cookie: "authservice_login=abc; session=xyz" } }),
      401,
      "unauthorized",
    )
  })

  it("a malformed token or an ID token: 401 invalid_token", async () => {
    const user = await createUser(app, b, "idtoken@example.com")
    const { tokens } = await signIn(user)
    for (const bad of ["not-a-jwt", "a.b.c", tokens.id_token]) {
      const res = await me(bad, "/passkeys")
      expectProblem(res, 401, "invalid_token")
      expect(res.headers["www-authenticate"]).toContain('error="invalid_token"')
    }
    expect((await me(tokens.access_token, "/passkeys")).status).toBe(200)
  })

  it("an access token whose aud does not include the issuer: 401 invalid_token", async () => {
    const user = await createUser(app, b, "audience@example.com")
    const { tokens, access } = await signIn(user, { resource: [RESOURCE] })
    expect(access.aud).toBe(RESOURCE)
    expectProblem(await me(tokens.access_token, "/passkeys"), 401, "invalid_token")
  })

  it("an expired token, a revoked session and a stale security version: 401 invalid_token", async () => {
    const user = await createUser(app, b, "live-checks@example.com")
    const expired = await signIn(user)
    await app.advance("301 seconds")
    expectProblem(await me(expired.tokens.access_token, "/passkeys"), 401, "invalid_token")

    const fresh = await signIn(user)
    expect((await me(fresh.tokens.access_token, "/passkeys")).status).toBe(200)
    await app.run(
      Effect.gen(function* () {
        const users = yield* Users
        const sql = yield* SqlClient.SqlClient
        yield* sql.withTransaction(
          users.revokeSessions({
            workspaceId: b.workspace_id,
            environmentId: b.environment_id,
            userId: user.id,
            sessionId: fresh.access.sid as string,
            reason: "user_logout",
          }),
        )
      }),
    )
    expectProblem(await me(fresh.tokens.access_token, "/passkeys"), 401, "invalid_token")

    const current = await signIn(user)
    await query(app, "update users set security_version = security_version + 1 where id = $1", [user.id])
    expectProblem(await me(current.tokens.access_token, "/passkeys"), 401, "invalid_token")
  })

  it("a blocked user's token: 401 invalid_token", async () => {
    const user = await createUser(app, b, "blocked-me@example.com")
    const { tokens } = await signIn(user)
    // A change made in the database directly is another replica's change here: this replica
    // learns of it when the NOTIFY arrives (milliseconds; the live-state memory held the state the
    // sign-in read), so the refusal is awaited within the 2 s the coherence rule allows.
    await query(app, "update users set status = 'blocked' where id = $1", [user.id])
    const deadline = Date.now() + 2_000
    let res = await me(tokens.access_token, "/passkeys")
    while (res.status !== 401 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20))
      res = await me(tokens.access_token, "/passkeys")
    }
    expectProblem(res, 401, "invalid_token")
  })

  it("also served at {issuer}/v1/me", async () => {
    const user = await createUser(app, b, "issuer-alias@example.com")
    const { tokens } = await signIn(user)
    const res = await app.issuer(b.environment_id, "/v1/me/passkeys", {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    })
    expect(res.status, res.text).toBe(200)
    expect(res.json).toEqual({ data: [], next_cursor: null })
  })

  it("CORS: the token's client must register the page Origin", async () => {
    const user = await createUser(app, b, "cors-me@example.com")
    const { tokens } = await signIn(user)
    const ok = await me(tokens.access_token, "/passkeys", { headers: { origin: ALLOWED_ORIGIN } })
    expect(ok.status).toBe(200)
    expect(ok.headers["access-control-allow-origin"]).toBe(ALLOWED_ORIGIN)
    const other = await registerClient(app, b, { allowed_origins: ["https://other.example.com"] })
    expect(other.client_id).toMatch(/^cli_/)
    expectProblem(
      await me(tokens.access_token, "/passkeys", { headers: { origin: "https://other.example.com" } }),
      403,
      "origin_not_allowed",
    )
  })
})

describe("GET /me/passkeys (rule 6)", () => {
  it("lists summaries only: never the credential id, public key or sign count; keyset pages", async () => {
    const { token, ids, user } = await withPasskeys("list@example.com", 2)
    const res = await me(token, "/passkeys")
    expect(res.status, res.text).toBe(200)
    expect(res.json.next_cursor).toBeNull()
    expect(res.json.data.map((p: { passkey_id: string }) => p.passkey_id)).toEqual([...ids].sort())
    for (const p of res.json.data) {
      expect(Object.keys(p).sort()).toEqual([
        "aaguid",
        "backed_up",
        "created_at",
        "device_type",
        "last_used_at",
        "name",
        "passkey_id",
        "rp_id",
        "user_id",
      ])
      expect(p.user_id).toBe(user.id)
    }
    const stored = await query<{ credential_id: string }>(
      app,
      "select credential_id from passkeys where user_id = $1",
      [user.id],
    )
    for (const { credential_id } of stored) expect(res.text).not.toContain(credential_id)
    const first = await me(token, "/passkeys?limit=1")
    expect(first.json.data).toHaveLength(1)
    const second = await me(token, `/passkeys?limit=1&cursor=${first.json.next_cursor}`)
    expect(second.json.data.map((p: { passkey_id: string }) => p.passkey_id)).toEqual([[...ids].sort()[1]])
    expectProblem(await me(token, "/passkeys?limit=0"), 400, "invalid_request")
  })

  it("shows only the caller's own passkeys", async () => {
    await withPasskeys("someone-else@example.com", 1)
    const { token } = await withPasskeys("only-mine@example.com", 0)
    expect((await me(token, "/passkeys")).json.data).toEqual([])
  })
})

describe("POST /me/passkeys/registration (rule 1: fresh session)", () => {
  it("registers a passkey: summary, passkey.created by the end user, visible to the Management API", async () => {
    const { user, ids } = await withPasskeys("register-me@example.com", 1)
    const created = (await eventsOf(app, b.environment_id, "passkey.created")).filter(
      (e) => e.payload.passkeyId === ids[0],
    )
    expect(created).toHaveLength(1)
    expect(created[0].actor).toEqual({ type: "end_user", id: user.id })
    const mgmt = await app.management(`/v1/users/${user.id}/passkeys?environment_id=${b.environment_id}`)
    expect(mgmt.json.data.map((p: { passkey_id: string }) => p.passkey_id)).toEqual(ids)
  })

  it("a session older than 5 minutes (token refreshed, auth_time unchanged): 403 reauthentication_required", async () => {
    const user = await createUser(app, b, "stale-me@example.com")
    const { tokens } = await signIn(user, { scope: "openid offline_access" })
    const options = await me(tokens.access_token, "/passkeys/registration/options", { method: "POST" })
    expect(options.status).toBe(200)
    await app.advance("5 minutes")
    await app.advance("1 second")
    const refreshed = await refreshTokens(app, b, client, tokens.refresh_token!)
    expectProblem(
      await me(refreshed.access_token, "/passkeys/registration/options", { method: "POST" }),
      403,
      "reauthentication_required",
    )
    expectProblem(
      await me(refreshed.access_token, "/passkeys/registration/verify", {
        body: { credential: new SoftwareAuthenticator().create(options.json, { origin }) },
      }),
      403,
      "reauthentication_required",
    )
    expect(await count(app, "select count(*) as n from passkeys where user_id = $1", [user.id])).toBe(0)
  })

  it("a failed attestation: 400 webauthn_verification_failed and the challenge is gone", async () => {
    const user = await createUser(app, b, "me-fail@example.com")
    const { tokens } = await signIn(user)
    const options = await me(tokens.access_token, "/passkeys/registration/options", { body: {} })
    const authenticator = new SoftwareAuthenticator()
    expectProblem(
      await me(tokens.access_token, "/passkeys/registration/verify", {
        body: { credential: authenticator.create(options.json, { origin, uv: false }) },
      }),
      400,
      "webauthn_verification_failed",
    )
    expectProblem(
      await me(tokens.access_token, "/passkeys/registration/verify", {
        body: { credential: authenticator.create(options.json, { origin }) },
      }),
      400,
      "webauthn_verification_failed",
    )
    expect(await count(app, "select count(*) as n from passkeys where user_id = $1", [user.id])).toBe(0)
  })

  it("a challenge belongs to the session that asked for it", async () => {
    const user = await createUser(app, b, "two-sessions@example.com")
    const one = await signIn(user)
    const two = await signIn(user)
    const options = await me(one.tokens.access_token, "/passkeys/registration/options", { method: "POST" })
    expectProblem(
      await me(two.tokens.access_token, "/passkeys/registration/verify", {
        body: { credential: new SoftwareAuthenticator().create(options.json, { origin }) },
      }),
      400,
      "webauthn_verification_failed",
    )
  })
})

describe("DELETE /me/passkeys/{passkeyId} (rule 4: never the last method)", () => {
  it("deletes one passkey: {passkey_id, deleted: true}, passkey.deleted and an audit record", async () => {
    const { token, ids, user } = await withPasskeys("delete-me@example.com", 2, { emailVerified: false })
    const res = await me(token, `/passkeys/${ids[0]}`, { method: "DELETE" })
    expect(res.status, res.text).toBe(200)
    expect(res.json).toEqual({ passkey_id: ids[0], deleted: true })
    expect(await count(app, "select count(*) as n from passkeys where id = $1", [ids[0]])).toBe(0)
    const deleted = (await eventsOf(app, b.environment_id, "passkey.deleted")).filter(
      (e) => e.payload.passkeyId === ids[0],
    )
    expect(deleted.map((e) => e.payload)).toEqual([{ userId: user.id, passkeyId: ids[0] }])
    expect(
      await count(app, "select count(*) as n from audit_events where action = 'passkey.deleted' and subject_id = $1", [
        ids[0],
      ]),
    ).toBe(1)
  })

  it("the last method (no verified email, no linked identity): 400 last_factor_deletion_requires_confirmation, nothing deleted", async () => {
    const { token, ids } = await withPasskeys("last-factor@example.com", 1, { emailVerified: false })
    expectProblem(
      await me(token, `/passkeys/${ids[0]}`, { method: "DELETE" }),
      400,
      "last_factor_deletion_requires_confirmation",
    )
    expect(await count(app, "select count(*) as n from passkeys where id = $1", [ids[0]])).toBe(1)
    expect(
      (await eventsOf(app, b.environment_id, "passkey.deleted")).filter((e) => e.payload.passkeyId === ids[0]),
    ).toEqual([])
  })

  it("a suppressed email does not count; a verified unsuppressed email and a linked identity do", async () => {
    const suppressed = await withPasskeys("suppressed@example.com", 1)
    await query(app, "update users set email_suppressed = true where id = $1", [suppressed.user.id])
    expectProblem(
      await me(suppressed.token, `/passkeys/${suppressed.ids[0]}`, { method: "DELETE" }),
      400,
      "last_factor_deletion_requires_confirmation",
    )

    const verified = await withPasskeys("verified-email@example.com", 1)
    expect((await me(verified.token, `/passkeys/${verified.ids[0]}`, { method: "DELETE" })).status).toBe(200)

    // an identity counts while its provider has a usable Connection (src/me/methods.ts)
    await createConnection(app, b, {
      provider: "github",
      provider_key: "github",
      provider_client_id: "gh-client",
      provider_client_secret: "s",
    })
    const linked = await withPasskeys("linked@example.com", 1, { emailVerified: false })
    await query(
      app,
      `insert into identities (id, workspace_id, environment_id, user_id, provider, provider_issuer, provider_subject, linked_at)
      values ($1, $2, $3, $4, 'github', 'https://github.com', $5, now())`,
      [randomId("idn"), b.workspace_id, b.environment_id, linked.user.id, randomId("sub")],
    )
    expect((await me(linked.token, `/passkeys/${linked.ids[0]}`, { method: "DELETE" })).status).toBe(200)
  })

  it("race: deleting the last two methods concurrently, exactly one succeeds", async () => {
    const { token, ids } = await withPasskeys("delete-race@example.com", 2, { emailVerified: false })
    const answers = await Promise.all(ids.map((id) => me(token, `/passkeys/${id}`, { method: "DELETE" })))
    expect(answers.map((r) => r.status).sort()).toEqual([200, 400])
    expect(answers.find((r) => r.status === 400)!.json.code).toBe("last_factor_deletion_requires_confirmation")
    expect(await count(app, "select count(*) as n from passkeys where id = any($1)", [ids])).toBe(1)
  })

  it("unknown, malformed, or another user's passkey id: 400 passkey_not_found", async () => {
    const other = await withPasskeys("owner@example.com", 1)
    const { token } = await withPasskeys("not-owner@example.com", 1)
    for (const id of [randomId("psk"), "nope", other.ids[0]!]) {
      expectProblem(await me(token, `/passkeys/${id}`, { method: "DELETE" }), 400, "passkey_not_found")
    }
    expect(await count(app, "select count(*) as n from passkeys where id = $1", [other.ids[0]])).toBe(1)
  })
})

describe("503 user_unavailable", () => {
  it("when the user, session or security state cannot be read", async () => {
    const user = await createUser(app, b, "unavailable@example.com")
    const { tokens } = await signIn(user)
    // The sign-in left this state in the replica's memory: a local change of the user makes the
    // next reads go to Postgres, which then fails.
    liveStateChanged(b.environment_id, user.id)
    await query(app, "alter table login_sessions rename to login_sessions_away")
    try {
      const res = await me(tokens.access_token, "/passkeys")
      expectProblem(res, 503, "user_unavailable")
      expect(res.headers["retry-after"]).toBeDefined()
    } finally {
      await query(app, "alter table login_sessions_away rename to login_sessions")
    }
    expect((await me(tokens.access_token, "/passkeys")).status).toBe(200)
  })
})
