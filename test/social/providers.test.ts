import { decodeJwt } from "jose"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, startApp, type TestApp } from "../support/app.js"
import {
  countRows,
  createClient,
  type LoginClientInfo,
  pkce,
  query,
  transactionBody,
  uniqueEmail,
} from "../login/support.js"
import { type FakeProviders, startFakeProviders } from "./fake-providers.js"
import { makeEnvironment } from "../support/tenancy.js"
import {
  connectFake,
  createConnection,
  eventsOf,
  requestUrl,
  socialEnv,
  socialProofOf,
  socialRoundTrip,
  startSocial,
  transactionView,
} from "./support.js"

// Google, Microsoft (multi-tenant), GitHub and Apple against local servers speaking their
// documented protocols; the app reaches them through SOCIAL_PROVIDER_HOSTS over TLS with the
// test CA (NODE_EXTRA_CA_CERTS).

let fake: FakeProviders
let app: TestApp
let b: Bootstrapped
let client: LoginClientInfo

beforeAll(async () => {
  fake = await startFakeProviders()
  app = await startApp({ env: socialEnv(fake) })
  b = await app.bootstrap()
  client = await createClient(app, b)
  for (const provider of ["google", "microsoft", "github", "apple"] as const)
    connections[provider] = (await connectFake(app, b, fake, provider)).id
})
const connections: Record<string, string> = {}
afterAll(async () => {
  await app?.close()
  await fake?.close()
})

/** A transaction with a known PKCE verifier, for the code exchange at the end. */
const newTransaction = async (overrides: Record<string, unknown> = {}) => {
  const { verifier, challenge } = pkce()
  const res = await app.request(b.interaction_domain, "/v1/auth/transactions", {
    body: transactionBody(client, { code_challenge: challenge, ...overrides }),
  })
  expect(res.status, res.text).toBe(201)
  return { id: res.json.transaction_id as string, verifier }
}

/** Complete (with the social login's completion proof) + token exchange: the access and ID token claims. */
const completeAndExchange = async (txn: { id: string; verifier: string }, socialProof: string) => {
  const done = await app.request(b.interaction_domain, `/v1/auth/transactions/${txn.id}/complete`, {
    method: "POST",
    body: { social_proof: socialProof },
  })
  expect(done.status, done.text).toBe(200)
  const token = await app.issuer(b.environment_id, "/oauth2/token", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code: done.json.authorization_code,
      redirect_uri: client.redirect_uri,
      code_verifier: txn.verifier,
      client_id: client.client_id,
    }).toString(),
  })
  expect(token.status, token.text).toBe(200)
  return { access: decodeJwt(token.json.access_token), id: decodeJwt(token.json.id_token) }
}

describe("Google", () => {
  it("a first login creates the user (user.created method social, identity.linked) and signs in with amr social, acr basic", async () => {
    const email = uniqueEmail("google")
    fake.setUser("google", { sub: "g-1001", email, email_verified: true, name: "Grace Hopper" })
    const txn = await newTransaction()
    const callback = await socialRoundTrip(app, b, fake, txn.id, "google")
    expect(callback.status, callback.text).toBe(302)
    const proof = socialProofOf(callback)
    expect(callback.headers["location"]).toBe(
      `http://${b.interaction_domain}/login/social/return?tx=${txn.id}&social=completed&social_proof=${proof}`,
    )
    const view = await transactionView(app, b, txn.id)
    expect([view.status, view.method]).toEqual(["authenticated", "social"])

    const [user] = await query<{ id: string; email_verified: boolean; name: string }>(
      app,
      "select id, email_verified, name from users where email_normalized = $1",
      [email],
    )
    expect(user).toMatchObject({ email_verified: true, name: "Grace Hopper" })
    const [identity] = await query<{ id: string; provider: string; provider_subject: string }>(
      app,
      "select id, provider, provider_subject from identities where user_id = $1",
      [user!.id],
    )
    expect(identity).toMatchObject({ provider: "google", provider_subject: "g-1001" })
    const created = (await eventsOf(app, b.environment_id, "user.created")).filter((e) => e.payload.userId === user!.id)
    expect(created.map((e) => e.payload)).toEqual([
      { userId: user!.id, method: "social", maskedEmail: expect.stringMatching(/^g\*\*\*@e\*\*\*\.com$/) },
    ])
    const linked = (await eventsOf(app, b.environment_id, "identity.linked")).filter(
      (e) => e.payload.userId === user!.id,
    )
    expect(linked.map((e) => [e.payload, e.actor])).toEqual([
      [
        { userId: user!.id, identityId: identity!.id, provider: "google" },
        { type: "end_user", id: user!.id },
      ],
    ])

    const tokens = await completeAndExchange(txn, proof)
    expect(tokens.access).toMatchObject({ sub: user!.id, amr: ["social"], acr: "urn:example-auth:loa:basic" })
    expect(tokens.id).toMatchObject({ sub: user!.id, amr: ["social"], acr: "urn:example-auth:loa:basic" })
    const sessionId = tokens.access["sid"]
    const expected = {
      userId: user!.id,
      sessionId,
      method: "social",
      clientId: client.client_id,
      ipPrefixHash: expect.stringMatching(/^[0-9a-f]{64}$/),
    }
    const succeeded = (await eventsOf(app, b.environment_id, "login.succeeded")).filter(
      (e) => e.payload.userId === user!.id,
    )
    expect(succeeded.map((e) => e.payload)).toEqual([expected])
    const sessions = (await eventsOf(app, b.environment_id, "session.created")).filter(
      (e) => e.payload.userId === user!.id,
    )
    expect(sessions.map((e) => e.payload)).toEqual([expected])
    // the token request carried our PKCE verifier and secret, and was accepted
    expect(fake.tokenRequests.filter((r) => r.provider === "google")).toEqual([{ provider: "google", ok: true }])
  })

  it("a known identity signs in again, whatever the email now says; no new user", async () => {
    fake.setUser("google", { sub: "g-1001", email: uniqueEmail("renamed"), email_verified: true })
    const users = await countRows(app, "users")
    const txn = await newTransaction()
    expect((await socialRoundTrip(app, b, fake, txn.id, "google")).status).toBe(302)
    const view = await transactionView(app, b, txn.id)
    expect(view.status).toBe("authenticated")
    expect(await countRows(app, "users")).toBe(users)
  })

  it("the provider's refusal ends the transaction failed with login.failed social_provider_error", async () => {
    fake.refuseNext("google", "access_denied")
    const txn = await newTransaction()
    const callback = await socialRoundTrip(app, b, fake, txn.id, "google")
    expect(callback.status).toBe(302)
    expect(callback.headers["location"]).toBe(
      `http://${b.interaction_domain}/login/social/return?tx=${txn.id}&social=failed`,
    )
    expect((await transactionView(app, b, txn.id)).status).toBe("failed")
    const failed = (await eventsOf(app, b.environment_id, "login.failed")).filter(
      (e) => e.payload.reason === "social_provider_error",
    )
    expect(failed.at(-1)!.payload).toEqual({
      method: "social",
      reason: "social_provider_error",
      clientId: client.client_id,
      ipPrefixHash: expect.stringMatching(/^[0-9a-f]{64}$/),
    })
    const complete = await app.request(b.interaction_domain, `/v1/auth/transactions/${txn.id}/complete`, {
      method: "POST",
    })
    expect([complete.status, complete.json.code]).toEqual([409, "transaction_not_authenticated"])
  })

  it("an address the provider did not verify creates nobody: link_required until the address is proven (test/social/unverified-email)", async () => {
    const email = uniqueEmail("unverified")
    fake.setUser("google", { sub: "g-2002", email, email_verified: false })
    const txn = await newTransaction()
    expect((await socialRoundTrip(app, b, fake, txn.id, "google")).status).toBe(302)
    const view = await transactionView(app, b, txn.id)
    expect([view.status, view.pending_link?.reason]).toEqual(["link_required", "email_unverified"])
    expect(await countRows(app, "users", "email_normalized = $1", [email])).toBe(0)
  })
})

describe("Microsoft (common endpoint)", () => {
  it("validates the issuer per tenant (iss = .../{tid}/v2.0) and counts the email verified only with xms_edov", async () => {
    const email = uniqueEmail("ms")
    fake.setUser("microsoft", { sub: "ms-abc", email, tid: "72f988bf-86f1-41af-91ab-2d7cd011db47", name: "Ada L" })
    const txn = await newTransaction()
    const start = await startSocial(app, b, txn.id, "microsoft")
    const authUrl = new URL(start.json.authorization_url)
    expect(authUrl.origin + authUrl.pathname).toBe("https://login.microsoftonline.com/common/oauth2/v2.0/authorize")
    expect(authUrl.searchParams.get("code_challenge_method")).toBe("S256")
    const visit = await fake.visit(start.json.authorization_url)
    expect((await requestUrl(app, visit.location!)).status).toBe(302)
    // without xms_edov Microsoft does not vouch for the address: nobody is created on its word
    const view = await transactionView(app, b, txn.id)
    expect([view.status, view.pending_link?.reason]).toEqual(["link_required", "email_unverified"])
    expect(await countRows(app, "users", "email_normalized = $1", [email])).toBe(0)

    const email2 = uniqueEmail("ms2")
    fake.setUser("microsoft", {
      sub: "ms-def",
      email: email2,
      tid: "0b3f6b2e-0000-4000-8000-000000000001",
      xms_edov: true,
    })
    const txn2 = await newTransaction()
    expect((await socialRoundTrip(app, b, fake, txn2.id, "microsoft")).status).toBe(302)
    const [user2] = await query<{ email_verified: boolean }>(
      app,
      "select email_verified from users where email_normalized = $1",
      [email2],
    )
    expect(user2!.email_verified).toBe(true)
  })
})

describe("ID token validation (OIDC Core 3.1.3.7)", () => {
  it.each([
    ["another nonce", "google", { nonce: "not-the-one-we-sent" }],
    ["another audience", "google", { aud: "someone-else" }],
    ["another issuer", "google", { iss: "https://accounts.evil.example" }],
    ["expired", "google", { exp: Math.floor(Date.now() / 1000) - 3600 }],
    [
      "a tenant issuer that does not match its tid",
      "microsoft",
      { iss: "https://login.microsoftonline.com/00000000-0000-0000-0000-000000000000/v2.0" },
    ],
  ] as const)(
    "an ID token with %s fails the login (social_provider_error); nobody is created",
    async (_label, provider, claims) => {
      const email = uniqueEmail("forged")
      fake.setUser(provider, {
        sub: `forged-${Math.random()}`,
        email,
        email_verified: true,
        tid: "11111111-1111-1111-1111-111111111111",
      })
      fake.overrideNextIdToken(provider, claims)
      const txn = await newTransaction()
      expect((await socialRoundTrip(app, b, fake, txn.id, provider)).status).toBe(302)
      expect((await transactionView(app, b, txn.id)).status).toBe("failed")
      expect(await countRows(app, "users", "email_normalized = $1", [email])).toBe(0)
    },
  )
})

describe("GitHub", () => {
  it("OAuth 2 + /user + /user/emails: only a verified address counts", async () => {
    const verified = uniqueEmail("gh")
    fake.setUser("github", {
      sub: "424242",
      name: "Octo Cat",
      emails: [
        { email: uniqueEmail("unverified-primary"), primary: true, verified: false },
        { email: verified, primary: false, verified: true },
      ],
    })
    const txn = await newTransaction()
    expect((await socialRoundTrip(app, b, fake, txn.id, "github")).status).toBe(302)
    expect((await transactionView(app, b, txn.id)).status).toBe("authenticated")
    const [user] = await query<{ id: string; email: string; email_verified: boolean; avatar_url: string }>(
      app,
      "select u.id, u.email, u.email_verified, u.avatar_url from users u join identities i on i.user_id = u.id where i.provider = 'github' and i.provider_subject = '424242'",
    )
    expect(user).toMatchObject({
      email: verified,
      email_verified: true,
      avatar_url: "https://avatars.githubusercontent.com/u/424242",
    })
  })

  it("no verified address at all: the login fails (social_provider_error), nobody is created", async () => {
    fake.setUser("github", { sub: "515151", emails: [{ email: uniqueEmail("nope"), primary: true, verified: false }] })
    const users = await countRows(app, "users")
    const txn = await newTransaction()
    expect((await socialRoundTrip(app, b, fake, txn.id, "github")).status).toBe(302)
    expect((await transactionView(app, b, txn.id)).status).toBe("failed")
    expect(await countRows(app, "users")).toBe(users)
  })
})

describe("Apple", () => {
  it("form_post callback; the ES256 client secret JWT is verified by Apple's token endpoint; first-time name kept", async () => {
    const email = uniqueEmail("apple")
    fake.setUser("apple", { sub: "001234.abcdef", email, email_verified: "true", name: "Tim Cook" })
    const txn = await newTransaction()
    const start = await startSocial(app, b, txn.id, "apple")
    const url = new URL(start.json.authorization_url)
    expect(url.searchParams.get("response_mode")).toBe("form_post")
    const visit = await fake.visit(start.json.authorization_url)
    expect(visit.form).toBeDefined()
    const before = fake.tokenRequests.filter((r) => r.provider === "apple").length
    const { postForm } = await import("./support.js")
    const callback = await postForm(app, visit.action!, visit.form!)
    expect(callback.status, callback.text).toBe(302)
    expect(fake.tokenRequests.filter((r) => r.provider === "apple").slice(before)).toEqual([
      { provider: "apple", ok: true },
    ])
    expect((await transactionView(app, b, txn.id)).status).toBe("authenticated")
    const [user] = await query<{ email_verified: boolean; name: string }>(
      app,
      "select email_verified, name from users where email_normalized = $1",
      [email],
    )
    expect(user).toMatchObject({ email_verified: true, name: "Tim Cook" })
  })

  it("a connection whose secret is not an Apple key: the token request is never made, the login fails (social_provider_error)", async () => {
    const env2 = await makeEnvironment(app, b.workspace_id, b.project_id)
    const b2 = { ...b, environment_id: env2, interaction_domain: `env-${env2.slice(4)}.login.localhost:${app.port}` }
    const client2 = await createClient(app, b2)
    const connection = await createConnection(app, b2, {
      provider: "apple",
      provider_key: "apple",
      provider_client_id: "svc.bad",
      provider_client_secret: "not-a-key",
    })
    fake.registerClient("apple", {
      clientId: "svc.bad",
      redirectUri: connection.callback_url,
      apple: { teamId: "T", keyId: "K", publicJwk: {} },
    })
    fake.setUser("apple", { sub: "001.bad", email: uniqueEmail("applebad"), email_verified: true })
    const created = await app.request(b2.interaction_domain, "/v1/auth/transactions", {
      body: transactionBody(client2),
    })
    const before = fake.tokenRequests.length
    const callback = await socialRoundTrip(app, b2, fake, created.json.transaction_id, "apple")
    expect(callback.status).toBe(302)
    expect(fake.tokenRequests.length).toBe(before)
    expect(
      (await app.request(b2.interaction_domain, `/v1/auth/transactions/${created.json.transaction_id}`)).json.status,
    ).toBe("failed")
  })
})

describe("profile_mapping (a Connection's claim names) in a real login", () => {
  /** Runs `body` with the provider's Connection using `mapping`, then restores the default. */
  const withMapping = async (provider: string, mapping: Record<string, string>, body: () => Promise<void>) => {
    const set = (profile_mapping: Record<string, string>) =>
      app.management(`/v1/connections/${connections[provider]}`, {
        method: "PATCH",
        key: b.api_key,
        body: { profile_mapping },
      })
    expect((await set(mapping)).status).toBe(200)
    try {
      await body()
    } finally {
      expect((await set({})).status).toBe(200)
    }
  }
  const userRow = (email: string) =>
    query<{
      id: string
      email: string
      email_verified: boolean
      name: string | null
      avatar_url: string | null
      locale: string | null
    }>(app, "select id, email, email_verified, name, avatar_url, locale from users where email_normalized = $1", [
      email,
    ])

  it("Google: a non-default mapping decides name, avatar, locale and the (verified) address; the standard claims are not used", async () => {
    const mapped = uniqueEmail("mapped")
    const standard = uniqueEmail("standard")
    await withMapping(
      "google",
      { email: "mail", email_verified: "mail_verified", name: "nickname", avatar_url: "photo", locale: "lang" },
      async () => {
        fake.setUser("google", {
          sub: "g-map-1",
          email: standard,
          email_verified: true,
          name: "Standard Name",
          extra: {
            picture: "https://img.example.com/standard.png",
            locale: "en",
            mail: mapped,
            mail_verified: true,
            nickname: "Nick",
            photo: "https://img.example.com/nick.png",
            lang: "fr-CA",
          },
        })
        const txn = await newTransaction()
        expect((await socialRoundTrip(app, b, fake, txn.id, "google")).status).toBe(302)
        expect((await transactionView(app, b, txn.id)).status).toBe("authenticated")
      },
    )
    expect(await userRow(standard)).toEqual([])
    const [user] = await userRow(mapped)
    expect(user).toMatchObject({
      email: mapped,
      email_verified: true,
      name: "Nick",
      avatar_url: "https://img.example.com/nick.png",
      locale: "fr-CA",
    })
  })

  it("an address read from another claim is not verified by the standard email_verified (it speaks of `email` only)", async () => {
    const mapped = uniqueEmail("mapped-unverified")
    await withMapping("google", { email: "mail" }, async () => {
      fake.setUser("google", {
        sub: "g-map-2",
        email: uniqueEmail("standard"),
        email_verified: true,
        extra: { mail: mapped },
      })
      const txn = await newTransaction()
      expect((await socialRoundTrip(app, b, fake, txn.id, "google")).status).toBe(302)
      const view = await transactionView(app, b, txn.id)
      expect([view.status, view.pending_link?.reason, view.pending_link?.email_verified_by_provider]).toEqual([
        "link_required",
        "email_unverified",
        false,
      ])
    })
    expect(await userRow(mapped)).toEqual([])
  })

  it("GitHub: a mapping can name GitHub's own /user fields (login, avatar_url)", async () => {
    const verified = uniqueEmail("gh-map")
    await withMapping("github", { name: "login", avatar_url: "avatar_url" }, async () => {
      fake.setUser("github", {
        sub: "636363",
        name: "Display Name",
        emails: [{ email: verified, primary: true, verified: true }],
      })
      const txn = await newTransaction()
      expect((await socialRoundTrip(app, b, fake, txn.id, "github")).status).toBe(302)
      expect((await transactionView(app, b, txn.id)).status).toBe("authenticated")
    })
    const [user] = await userRow(verified)
    expect(user).toMatchObject({
      email_verified: true,
      name: "user636363",
      avatar_url: "https://avatars.githubusercontent.com/u/636363",
    })
  })
})
