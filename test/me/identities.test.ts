import { beforeAll, describe, expect, it } from "vitest"
import { createConnection } from "../social/support.js"
import {
  count,
  createUser,
  expectProblem,
  insertIdentity,
  me,
  query,
  randomId,
  signIn,
  signedInUser,
  uniqueEmail,
  useMeApp,
  userEvents,
  withTableAway,
} from "./support.js"

// GET /me/identities and DELETE /me/identities/{identityId} (spec: Self-service /me; Linked
// identity; /me rule 4; Errors: 400 identity_not_found, 400
// last_factor_deletion_requires_confirmation; Events: identity.unlinked). Identities are made
// by social login; here rows are inserted as it stores them.

const ctx = useMeApp()

/** Usable Connections for the providers of the identities below (only those count as ways to sign in). */
beforeAll(async () => {
  for (const provider of ["apple", "github", "google"]) {
    await createConnection(ctx.app, ctx.b, {
      provider,
      provider_key: provider,
      provider_client_id: `${provider}-client`,
      provider_client_secret: "provider-secret",
    })
  }
})

/** A user whose email is NOT verified (so it is no sign-in method), signed in. */
const unverifiedUser = async (label: string) => {
  const user = await createUser(ctx.app, ctx.b, uniqueEmail(label))
  await query(ctx.app, "update users set email_verified = false where id = $1", [user.id])
  const session = await signIn(ctx, user)
  return { user, token: session.tokens.access_token }
}

describe("GET /me/identities", () => {
  it("lists my identities: identity_id, provider, linked_at, last_used_at (never the provider subject)", async () => {
    const { user, token } = await signedInUser(ctx, "list")
    const linkedAt = new Date(ctx.app.now() - 60_000)
    const github = await insertIdentity(ctx, user.id, "github", linkedAt)
    const google = await insertIdentity(ctx, user.id, "google", linkedAt)
    await query(ctx.app, "update identities set last_used_at = $2, email = 'me@gmail.example' where id = $1", [
      google,
      new Date(ctx.app.now()),
    ])
    const stranger = await signedInUser(ctx, "stranger")
    await insertIdentity(ctx, stranger.user.id, "github")

    const res = await me(ctx, token, "/identities")
    expect(res.status, res.text).toBe(200)
    expect(res.json.next_cursor).toBeNull()
    const byId = Object.fromEntries(res.json.data.map((i: { identity_id: string }) => [i.identity_id, i]))
    expect(Object.keys(byId).sort()).toEqual([github, google].sort())
    expect(byId[github]).toEqual({
      identity_id: github,
      user_id: user.id,
      provider: "github",
      connection_id: null,
      email: null,
      linked_at: linkedAt.toISOString(),
      last_used_at: null,
    })
    expect(byId[google]).toMatchObject({
      provider: "google",
      email: "me@gmail.example",
      last_used_at: new Date(ctx.app.now()).toISOString(),
    })
    const subjects = await query<{ provider_subject: string }>(
      ctx.app,
      "select provider_subject from identities where user_id = $1",
      [user.id],
    )
    for (const { provider_subject } of subjects) expect(res.text).not.toContain(provider_subject)
    const page = await me(ctx, token, "/identities?limit=1")
    expect(page.json.data).toHaveLength(1)
    expect(page.json.next_cursor).not.toBeNull()
  })

  it("503 user_unavailable when the identities cannot be read", async () => {
    const { token } = await signedInUser(ctx, "unavailable")
    await query(ctx.app, "alter table identities rename to identities_away")
    try {
      const res = await me(ctx, token, "/identities")
      expectProblem(res, 503, "user_unavailable")
      expect(res.headers["retry-after"]).toBe("1")
    } finally {
      await query(ctx.app, "alter table identities_away rename to identities")
    }
    expect((await me(ctx, token, "/identities")).status).toBe(200)
  })
})

describe("DELETE /me/identities/{identityId}", () => {
  it("unlinks: {identity_id, unlinked: true}, identity.unlinked with the provider, an audit record", async () => {
    const { user, token } = await signedInUser(ctx, "unlink")
    const id = await insertIdentity(ctx, user.id, "github")
    const res = await me(ctx, token, `/identities/${id}`, { method: "DELETE" })
    expect(res.status, res.text).toBe(200)
    expect(res.json).toEqual({ identity_id: id, unlinked: true })
    expect(await count(ctx.app, "select count(*) as n from identities where id = $1", [id])).toBe(0)
    const events = await userEvents(ctx, "identity.unlinked", user.id)
    expect(events.map((e) => e.payload)).toEqual([{ userId: user.id, identityId: id, provider: "github" }])
    expect(events[0].actor).toEqual({ type: "end_user", id: user.id })
    expect(
      await count(
        ctx.app,
        "select count(*) as n from audit_events where action = 'identity.unlinked' and subject_id = $1",
        [id],
      ),
    ).toBe(1)
    // gone: a second delete is identity_not_found
    expectProblem(await me(ctx, token, `/identities/${id}`, { method: "DELETE" }), 400, "identity_not_found")
  })

  it("unknown, malformed or another user's identity: 400 identity_not_found, nothing removed", async () => {
    const { token } = await signedInUser(ctx, "not-mine")
    const stranger = await signedInUser(ctx, "owner")
    const theirs = await insertIdentity(ctx, stranger.user.id, "google")
    for (const id of [randomId("idn"), "nope", theirs]) {
      expectProblem(await me(ctx, token, `/identities/${id}`, { method: "DELETE" }), 400, "identity_not_found")
    }
    expect(await count(ctx.app, "select count(*) as n from identities where id = $1", [theirs])).toBe(1)
    expect(await userEvents(ctx, "identity.unlinked", stranger.user.id)).toEqual([])
  })

  it("the last way to sign in (no verified email, no passkey): 400 last_factor_deletion_requires_confirmation, nothing removed", async () => {
    const { user, token } = await unverifiedUser("last")
    const id = await insertIdentity(ctx, user.id, "apple")
    expectProblem(
      await me(ctx, token, `/identities/${id}`, { method: "DELETE" }),
      400,
      "last_factor_deletion_requires_confirmation",
    )
    expect(await count(ctx.app, "select count(*) as n from identities where id = $1", [id])).toBe(1)
    expect(await userEvents(ctx, "identity.unlinked", user.id)).toEqual([])
    // A suppressed verified email does not count either.
    await query(ctx.app, "update users set email_verified = true, email_suppressed = true where id = $1", [user.id])
    expectProblem(
      await me(ctx, token, `/identities/${id}`, { method: "DELETE" }),
      400,
      "last_factor_deletion_requires_confirmation",
    )
    // A second identity does.
    const second = await insertIdentity(ctx, user.id, "github")
    expect((await me(ctx, token, `/identities/${id}`, { method: "DELETE" })).status).toBe(200)
    expectProblem(
      await me(ctx, token, `/identities/${second}`, { method: "DELETE" }),
      400,
      "last_factor_deletion_requires_confirmation",
    )
  })

  it("503 user_unavailable when the unlink cannot be written: Retry-After, the identity stays", async () => {
    const { user, token } = await signedInUser(ctx, "unavailable-unlink")
    const id = await insertIdentity(ctx, user.id, "github")
    // Injected failure after the token check: the outbox cannot take identity.unlinked.
    const res = await withTableAway(ctx, "event_outbox", () =>
      me(ctx, token, `/identities/${id}`, { method: "DELETE" }),
    )
    expectProblem(res, 503, "user_unavailable")
    expect(res.headers["retry-after"]).toBe("1")
    expect(await count(ctx.app, "select count(*) as n from identities where id = $1", [id])).toBe(1)
    expect(await userEvents(ctx, "identity.unlinked", user.id)).toEqual([])
  })

  it("an identity whose Connection is disabled or deleted is no way to sign in: it never stands in for the last one", async () => {
    const { user, token } = await unverifiedUser("unusable")
    const usable = await insertIdentity(ctx, user.id, "google")
    // Microsoft's Connection is disabled; an old SSO Connection was deleted.
    const microsoft = await createConnection(ctx.app, ctx.b, {
      provider: "microsoft",
      provider_key: "microsoft",
      provider_client_id: "ms-client",
      provider_client_secret: "s",
    })
    expect(
      (await ctx.app.management(`/v1/connections/${microsoft.id}`, { method: "PATCH", body: { status: "disabled" } }))
        .status,
    ).toBe(200)
    const sso = await createConnection(ctx.app, ctx.b, {
      provider: "generic_oidc",
      provider_key: "old-sso",
      provider_client_id: "sso-client",
      provider_client_secret: "s",
      issuer: "https://sso.example.com",
    })
    expect((await ctx.app.management(`/v1/connections/${sso.id}`, { method: "DELETE" })).status).toBeLessThan(300)
    const disabled = await insertIdentity(ctx, user.id, "microsoft")
    const deleted = await insertIdentity(ctx, user.id, "old-sso")
    // the only other identities cannot sign in: the usable one is the last way
    expectProblem(
      await me(ctx, token, `/identities/${usable}`, { method: "DELETE" }),
      400,
      "last_factor_deletion_requires_confirmation",
    )
    expect(await count(ctx.app, "select count(*) as n from identities where user_id = $1", [user.id])).toBe(3)
    // unlinking the unusable ones leaves that way: allowed
    for (const id of [disabled, deleted])
      expect((await me(ctx, token, `/identities/${id}`, { method: "DELETE" })).status).toBe(200)
    // once the Connection is active again, its identity counts
    expect(
      (await ctx.app.management(`/v1/connections/${microsoft.id}`, { method: "PATCH", body: { status: "active" } }))
        .status,
    ).toBe(200)
    const again = await insertIdentity(ctx, user.id, "microsoft")
    expect((await me(ctx, token, `/identities/${usable}`, { method: "DELETE" })).status).toBe(200)
    expectProblem(
      await me(ctx, token, `/identities/${again}`, { method: "DELETE" }),
      400,
      "last_factor_deletion_requires_confirmation",
    )
  })

  it("a stale identity (its Connection now names another issuer) is no way to sign in: it never stands in for the last one", async () => {
    const { user, token } = await unverifiedUser("stale")
    const usable = await insertIdentity(ctx, user.id, "google")
    // an identity of another issuer than the one the Google Connection issues (docs/decisions/social-login.md, Social login)
    const stale = await insertIdentity(ctx, user.id, "github", new Date(ctx.app.now()), "https://github.example.com")
    expectProblem(
      await me(ctx, token, `/identities/${usable}`, { method: "DELETE" }),
      400,
      "last_factor_deletion_requires_confirmation",
    )
    expect((await me(ctx, token, `/identities/${stale}`, { method: "DELETE" })).status).toBe(200)
  })

  it("race: unlinking the last two methods at once, exactly one succeeds", async () => {
    const { user, token } = await unverifiedUser("race")
    const ids = [await insertIdentity(ctx, user.id, "github"), await insertIdentity(ctx, user.id, "google")]
    const answers = await Promise.all(ids.map((id) => me(ctx, token, `/identities/${id}`, { method: "DELETE" })))
    expect(answers.map((r) => r.status).sort()).toEqual([200, 400])
    expect(answers.find((r) => r.status === 400)!.json.code).toBe("last_factor_deletion_requires_confirmation")
    expect(await count(ctx.app, "select count(*) as n from identities where id = any($1)", [ids])).toBe(1)
    expect(await userEvents(ctx, "identity.unlinked", user.id)).toHaveLength(1)
  })
})
