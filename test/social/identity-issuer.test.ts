import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, startApp, type TestApp } from "../support/app.js"
import {
  countRows,
  createClient,
  createTransaction,
  type LoginClientInfo,
  pkce,
  publicApi,
  query,
  type SmtpSink,
  startSmtpSink,
  uniqueEmail,
} from "../login/support.js"
import {
  createClient as createOidcClient,
  createUser as createOidcUser,
  exchangeCode,
  mintCode,
} from "../oidc/support.js"
import { randomId } from "../passkeys/support/helpers.js"
import { makeEnvironment, makeKey } from "../support/tenancy.js"
import { type FakeProviders, startFakeProviders } from "./fake-providers.js"
import { type OpAccount, startOidcProvider, throughProvider } from "./oidc-provider.js"
import {
  connectFake,
  createConnection,
  eventsOf,
  requestUrl,
  socialEnv,
  startSocial,
  transactionView,
} from "./support.js"

// Identities are matched on issuer + subject claim + subject (docs/decisions/social-login.md, Social login:
// "Identities carry their issuer"; OIDC Core 1.0 section 2). The threat: a Management API key
// holding only `connections:write` re-points a generic OIDC connection's `issuer` to an IdP it
// controls (confirming it in the same PATCH, as the spec allows), or remaps
// `profile_mapping.sub` to a claim users choose; every matching value then signed in as the
// existing user, with no proof. Two real `oidc-provider` instances play the real IdP and the
// attacker's.

type Op = Awaited<ReturnType<typeof startOidcProvider>>
let op1: Op
let op2: Op
let fake: FakeProviders
let smtp: SmtpSink
let app: TestApp
let b: Bootstrapped

beforeAll(async () => {
  op1 = await startOidcProvider({ clientId: "authservice-rp", clientSecret: "op-client-secret" })
  op2 = await startOidcProvider({ clientId: "authservice-rp", clientSecret: "op-client-secret" })
  fake = await startFakeProviders()
  smtp = await startSmtpSink()
  app = await startApp({ worker: true, env: { ...socialEnv(fake), SMTP_URL: smtp.url } })
  b = await app.bootstrap()
})
afterAll(async () => {
  await app?.close()
  await op1?.close()
  await op2?.close()
  await fake?.close()
  await smtp?.close()
})

interface Env {
  readonly b: Bootstrapped
  readonly client: LoginClientInfo
  readonly connectionId: string
  /** A key of this Environment holding only `connections:write` (the attacker's). */
  readonly writeOnlyKey: string
}

/** An Environment of its own with a confirmed generic OIDC connection to op1 (its callback registered at both IdPs). */
const freshEnvironment = async (): Promise<Env> => {
  const id = await makeEnvironment(app, b.workspace_id, b.project_id)
  const env: Bootstrapped = {
    ...b,
    environment_id: id,
    interaction_domain: `env-${id.slice(4)}.login.localhost:${app.port}`,
    issuer: `http://localhost:${app.port}/e/${id}`,
  }
  const client = await createClient(app, env)
  const connection = await createConnection(app, env, {
    provider: "generic_oidc",
    provider_key: "corp-sso",
    provider_client_id: "authservice-rp",
    provider_client_secret: "op-client-secret",
    issuer: op1.issuer,
  })
  op1.addRedirectUri(connection.callback_url)
  op2.addRedirectUri(connection.callback_url)
  const writeOnlyKey = await makeKey(app, {
    workspaceId: b.workspace_id,
    environmentId: id,
    scopes: ["connections:write"],
  })
  return { b: env, client, connectionId: connection.id, writeOnlyKey }
}

const patchConnection = (e: Env, body: Record<string, unknown>, key = e.writeOnlyKey) =>
  app.management(`/v1/connections/${e.connectionId}`, { method: "PATCH", key, body })

/** A custom-UI social login at whichever IdP the connection names now, as `account`: the transaction's view and its proof. */
const socialLogin = async (e: Env, op: Op, account: OpAccount) => {
  op.setAccount(account)
  const { verifier, challenge } = pkce()
  const txn = await createTransaction(app, e.b, e.client, { code_challenge: challenge })
  const start = await startSocial(app, e.b, txn, "generic_oidc")
  expect(start.status, start.text).toBe(200)
  const back = await requestUrl(
    app,
    await throughProvider(start.json.authorization_url, `http://${e.b.interaction_domain}`),
  )
  expect(back.status, back.text).toBe(302)
  const proof = new URL(back.headers["location"] as string).searchParams.get("social_proof") ?? undefined
  return { txn, verifier, proof, view: await transactionView(app, e.b, txn) }
}

const userIdOf = async (_e: Env, txn: string) =>
  (await query<{ user_id: string | null }>(app, "select user_id from auth_transactions where id = $1", [txn]))[0]
    ?.user_id ?? null

/** The victim: an account made by a first login at the real IdP (op1). */
const victimAt = async (e: Env) => {
  const account: OpAccount = {
    sub: `op-victim-${Math.random().toString(36).slice(2, 10)}`,
    email: uniqueEmail("victim"),
    email_verified: true,
    name: "Victim",
  }
  const first = await socialLogin(e, op1, account)
  expect(first.view.status).toBe("authenticated")
  const userId = (await userIdOf(e, first.txn))!
  const [identity] = await query<{ id: string; provider_issuer: string; subject_claim: string }>(
    app,
    "select id, provider_issuer, subject_claim from identities where user_id = $1",
    [userId],
  )
  expect(identity).toMatchObject({ provider_issuer: op1.issuer, subject_claim: "sub" })
  return { account, userId, identityId: identity!.id }
}

const identitiesOf = (userId: string) =>
  query<{ id: string; provider_issuer: string | null; subject_claim: string; provider_subject: string }>(
    app,
    "select id, provider_issuer, subject_claim, provider_subject from identities where user_id = $1 order by linked_at",
    [userId],
  )

describe("a re-pointed issuer or a remapped subject claim never signs in as an existing user", () => {
  it("issuer re-pointed (and confirmed in the same PATCH) to an IdP issuing the victim's sub: link_required, not the victim", async () => {
    const e = await freshEnvironment()
    const victim = await victimAt(e)
    const moved = await patchConnection(e, { issuer: op2.issuer, owner_confirmed: true })
    expect(moved.status, moved.text).toBe(200)
    expect(moved.json).toMatchObject({ issuer: op2.issuer, owner_confirmed: true })
    // The attacker's IdP says: the victim's sub, the victim's (verified) address.
    const attempt = await socialLogin(e, op2, {
      sub: victim.account.sub,
      email: victim.account.email,
      email_verified: true,
    })
    expect(attempt.view.status).toBe("link_required")
    expect(attempt.view.pending_link).toMatchObject({
      provider: "corp-sso",
      reason: "existing_account",
      proof_methods: ["email_otp", "passkey"],
    })
    expect(await userIdOf(e, attempt.txn)).toBeNull()
    const complete = await publicApi(app, e.b, `/auth/transactions/${attempt.txn}/complete`, {
      method: "POST",
      body: { social_proof: attempt.proof },
    })
    expect([complete.status, complete.json.code]).toEqual([409, "transaction_not_authenticated"])
    // The victim's identity is untouched (it is stale now: it matches nothing).
    expect(await identitiesOf(victim.userId)).toEqual([
      {
        id: victim.identityId,
        provider_issuer: op1.issuer,
        subject_claim: "sub",
        provider_subject: victim.account.sub,
      },
    ])
  })

  it("issuer re-pointed, the same sub with another address: a new account, never the victim's", async () => {
    const e = await freshEnvironment()
    const victim = await victimAt(e)
    expect((await patchConnection(e, { issuer: op2.issuer, owner_confirmed: true })).status).toBe(200)
    const attempt = await socialLogin(e, op2, {
      sub: victim.account.sub,
      email: uniqueEmail("attacker"),
      email_verified: true,
    })
    expect(attempt.view.status).toBe("authenticated")
    const signedIn = await userIdOf(e, attempt.txn)
    expect(signedIn).not.toBeNull()
    expect(signedIn).not.toBe(victim.userId)
    expect(await identitiesOf(victim.userId)).toHaveLength(1)
  })

  it("profile_mapping.sub remapped (and confirmed) to a claim users choose: link_required, not the victim", async () => {
    const e = await freshEnvironment()
    const victim = await victimAt(e)
    const remapped = await patchConnection(e, { profile_mapping: { sub: "name" }, owner_confirmed: true })
    expect(remapped.status, remapped.text).toBe(200)
    expect(remapped.json).toMatchObject({ profile_mapping: { sub: "name" }, owner_confirmed: true })
    // An account of the same IdP whose display name is the victim's subject.
    const attempt = await socialLogin(e, op1, {
      sub: `op-attacker-${Math.random().toString(36).slice(2, 8)}`,
      name: victim.account.sub,
      email: victim.account.email,
      email_verified: true,
    })
    expect(attempt.view.status).toBe("link_required")
    expect(await userIdOf(e, attempt.txn)).toBeNull()
    expect(await identitiesOf(victim.userId)).toHaveLength(1)
  })
})

describe("the legitimate re-link after a proof", () => {
  it("the IdP moved: the user proves the account by Email OTP; the stale identity is replaced; the next login signs in directly", async () => {
    const e = await freshEnvironment()
    const victim = await victimAt(e)
    expect((await patchConnection(e, { issuer: op2.issuer, owner_confirmed: true }, b.api_key)).status).toBe(200)
    const newAccount: OpAccount = {
      sub: `op2-${victim.account.sub}`,
      email: victim.account.email,
      email_verified: true,
    }
    const attempt = await socialLogin(e, op2, newAccount)
    expect(attempt.view.status).toBe("link_required")
    const started = await publicApi(app, e.b, `/auth/transactions/${attempt.txn}/email/start`, {
      body: { email: victim.account.email },
    })
    expect(started.status, started.text).toBe(202)
    const verified = await publicApi(app, e.b, `/auth/transactions/${attempt.txn}/email/verify`, {
      body: { challenge_id: started.json.challenge_id, code: await smtp.waitForCode(victim.account.email) },
    })
    expect(verified.status, verified.text).toBe(200)
    expect(await userIdOf(e, attempt.txn)).toBe(victim.userId)
    // one identity: the new issuer's; the stale one is gone
    const after = await identitiesOf(victim.userId)
    expect(after.map((i) => [i.provider_issuer, i.provider_subject])).toEqual([[op2.issuer, newAccount.sub]])
    const unlinked = (await eventsOf(app, e.b.environment_id, "identity.unlinked")).filter(
      (ev) => ev.payload.userId === victim.userId,
    )
    expect(unlinked.map((ev) => ev.payload)).toEqual([
      { userId: victim.userId, identityId: victim.identityId, provider: "corp-sso" },
    ])
    const linked = (await eventsOf(app, e.b.environment_id, "identity.linked")).filter(
      (ev) => ev.payload.userId === victim.userId,
    )
    expect(linked.map((ev) => ev.payload.identityId)).toEqual([victim.identityId, after[0]!.id])
    expect(
      await countRows(
        app,
        "audit_events",
        "action = 'identity.unlinked' and subject_id = $1 and details->>'reason' = 'replaced_stale'",
        [victim.identityId],
      ),
    ).toBe(1)
    // complete with the browser's proof
    const done = await publicApi(app, e.b, `/auth/transactions/${attempt.txn}/complete`, {
      method: "POST",
      body: { social_proof: attempt.proof },
    })
    expect(done.status, done.text).toBe(200)
    // the next login at the new IdP signs in at once
    const next = await socialLogin(e, op2, newAccount)
    expect(next.view.status).toBe("authenticated")
    expect(await userIdOf(e, next.txn)).toBe(victim.userId)
  })

  it("/me link after the IdP moved: the stale identity is replaced, not provider_already_linked", async () => {
    const e = await freshEnvironment()
    const APP_RETURN = "https://app.example.com/settings"
    const client = await createOidcClient(app, e.b, { redirectUris: [APP_RETURN] })
    const user = await createOidcUser(app, e.b)
    // An identity of the IdP the connection named before (as the migration's backfill or an earlier login left it).
    const stale = randomId("idn")
    await query(
      app,
      `insert into identities (id, workspace_id, environment_id, user_id, connection_id, provider, provider_issuer, subject_claim, provider_subject, linked_at)
      values ($1, $2, $3, $4, $5, 'corp-sso', 'https://old-idp.example.com', 'sub', 'old-sub', now())`,
      [stale, e.b.workspace_id, e.b.environment_id, user.id, e.connectionId],
    )
    const tokens = await exchangeCode(app, e.b, client, await mintCode(app, e.b, client, user))
    expect(tokens.status, tokens.text).toBe(200)
    const token = tokens.json.access_token as string
    const started = await app.request(e.b.interaction_domain, "/v1/me/identities/generic_oidc/link", {
      method: "POST",
      body: { redirect_uri: APP_RETURN },
      headers: { authorization: `Bearer ${token}` },
    })
    expect(started.status, started.text).toBe(200)
    op1.setAccount({ sub: "me-link-new-sub", email: uniqueEmail("me-link"), email_verified: true })
    const back = await requestUrl(
      app,
      await throughProvider(started.json.authorization_url, `http://${e.b.interaction_domain}`),
    )
    const code = new URL(back.headers["location"] as string).searchParams.get("link_code")!
    const confirmed = await app.request(e.b.interaction_domain, "/v1/me/identities/generic_oidc/link/confirm", {
      method: "POST",
      body: { link_code: code },
      headers: { authorization: `Bearer ${token}` },
    })
    expect(confirmed.status, confirmed.text).toBe(200)
    const [linked] = await identitiesOf(user.id)
    expect([linked!.provider_issuer, linked!.provider_subject]).toEqual([op1.issuer, "me-link-new-sub"])
    expect(confirmed.json).toEqual({ identity_id: linked!.id, provider: "corp-sso", linked: true })
    const unlinked = (await eventsOf(app, e.b.environment_id, "identity.unlinked")).filter(
      (ev) => ev.payload.userId === user.id,
    )
    expect(unlinked.map((ev) => ev.payload)).toEqual([{ userId: user.id, identityId: stale, provider: "corp-sso" }])
  })
})

describe("profile_mapping.sub on the Management API", () => {
  it("may be set only for generic_oidc connections (POST and PATCH): 400 invalid_request naming the rule; nothing changes", async () => {
    const e = await freshEnvironment()
    const body = (provider: string, extra: Record<string, unknown> = {}) => ({
      environment_id: e.b.environment_id,
      mode: "byo",
      provider,
      provider_key: provider,
      provider_client_id: "id",
      provider_client_secret: "secret",
      ...extra,
    })
    for (const [provider, claim] of [
      ["google", "email"],
      ["github", "login"],
      ["microsoft", "preferred_username"],
      ["apple", "email"],
    ] as const) {
      const refused = await app.management("/v1/connections", {
        method: "POST",
        body: body(provider, { profile_mapping: { sub: claim } }),
      })
      expect([refused.status, refused.json.code], provider).toEqual([400, "invalid_request"])
      expect(refused.json.detail).toContain("profile_mapping.sub may be set only for generic_oidc")
    }
    expect(
      await countRows(app, "connections", "environment_id = $1 and provider <> 'generic_oidc'", [e.b.environment_id]),
    ).toBe(0)
    const github = await app.management("/v1/connections", {
      method: "POST",
      body: body("github", { profile_mapping: { name: "login" } }),
    })
    expect(github.status, github.text).toBe(201)
    const refused = await app.management(`/v1/connections/${github.json.id}`, {
      method: "PATCH",
      body: { profile_mapping: { sub: "login" } },
    })
    expect([refused.status, refused.json.code]).toEqual([400, "invalid_request"])
    expect((await app.management(`/v1/connections/${github.json.id}`)).json.profile_mapping).toEqual({ name: "login" })
    // other mapping fields stay allowed
    expect(
      (
        await app.management(`/v1/connections/${github.json.id}`, {
          method: "PATCH",
          body: { profile_mapping: { name: "name" } },
        })
      ).status,
    ).toBe(200)
    // generic OIDC may name the subject's claim
    expect(
      (await patchConnection(e, { profile_mapping: { sub: "oid" }, owner_confirmed: true })).json.profile_mapping,
    ).toEqual({ sub: "oid" })
  })

  it("a change of the subject claim clears owner_confirmed like an issuer change (unless confirmed in the same PATCH), and is audited", async () => {
    const e = await freshEnvironment()
    /** One PATCH a second after the previous one (the audit trail is read in time order). */
    const step = async (body: Record<string, unknown>) => {
      await app.advance("1 second")
      const res = await patchConnection(e, body)
      expect(res.status, res.text).toBe(200)
      return res.json.owner_confirmed as boolean
    }
    expect(await step({ profile_mapping: { sub: "oid" } })).toBe(false)
    // confirming again; the same claim spelled again, or other mapping fields, are no change
    expect(await step({ owner_confirmed: true })).toBe(true)
    expect(await step({ profile_mapping: { sub: "oid", email: "mail" } })).toBe(true)
    // back to the standard claim: a change
    expect(await step({ profile_mapping: { email: "mail" } })).toBe(false)
    // changed and confirmed in one PATCH
    expect(await step({ profile_mapping: { sub: "upn" }, owner_confirmed: true })).toBe(true)
    const audit = await query<{ action: string; details: any }>(
      app,
      "select action, details from audit_events where subject_id = $1 and action like 'connection.%' order by created_at, id",
      [e.connectionId],
    )
    expect(
      audit.filter((a) => a.action === "connection.owner_confirmation_cleared").map((a) => a.details.reason),
    ).toEqual(["subject_claim_changed", "subject_claim_changed"])
    expect(audit.filter((a) => a.details.subject_claim !== undefined).map((a) => a.details.subject_claim)).toEqual([
      { from: "sub", to: "oid" },
      { from: "oid", to: "sub" },
      { from: "sub", to: "upn" },
    ])
  })
})

describe("Microsoft identities stored before issuers were kept", () => {
  it("a legacy identity (no issuer) signs in and adopts the validated tenant issuer; then another tenant's same sub does not match", async () => {
    const connection = await connectFake(app, b, fake, "microsoft")
    const client = await createClient(app, b)
    const user = await createOidcUser(app, b)
    const legacy = randomId("idn")
    await query(
      app,
      `insert into identities (id, workspace_id, environment_id, user_id, connection_id, provider, provider_subject, linked_at)
      values ($1, $2, $3, $4, $5, 'microsoft', 'ms-legacy-1', now())`,
      [legacy, b.workspace_id, b.environment_id, user.id, connection.id],
    )
    const login = async (tid: string, email: string) => {
      fake.setUser("microsoft", { sub: "ms-legacy-1", email, tid })
      const txn = await createTransaction(app, b, client)
      const start = await startSocial(app, b, txn, "microsoft")
      expect((await requestUrl(app, (await fake.visit(start.json.authorization_url)).location!)).status).toBe(302)
      return txn
    }
    const first = await login("11111111-1111-1111-1111-111111111111", uniqueEmail("legacy"))
    expect(await userIdOf({ b } as Env, first)).toBe(user.id)
    expect(await query(app, "select provider_issuer from identities where id = $1", [legacy])).toEqual([
      { provider_issuer: "https://login.microsoftonline.com/11111111-1111-1111-1111-111111111111/v2.0" },
    ])
    const other = await login("22222222-2222-2222-2222-222222222222", uniqueEmail("other-tenant"))
    expect(await userIdOf({ b } as Env, other)).not.toBe(user.id)
  })
})
