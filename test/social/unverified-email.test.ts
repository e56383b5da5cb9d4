import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, startApp, type TestApp } from "../support/app.js"
import { countRows, query, type SmtpSink, startSmtpSink, uniqueEmail } from "../login/support.js"
import { SoftwareAuthenticator } from "../passkeys/support/authenticator.js"
import {
  completeAndExchange,
  type FlowClient,
  passkeyCall,
  publicApi,
  registerClient,
  startTransaction,
  type Transaction,
} from "../passkeys/support/flow.js"
import { createUser } from "../passkeys/support/helpers.js"
import { type FakeProviders, startFakeProviders } from "./fake-providers.js"
import { startOidcProvider, throughProvider } from "./oidc-provider.js"
import {
  connectFake,
  createConnection,
  eventsOf,
  requestUrl,
  socialEnv,
  socialProofOf,
  startSocial,
} from "./support.js"

// An address the provider did not verify never creates an account and never links to one
// without proof (pre-account takeover: someone holding a provider account with another
// person's unverified address must not own that person's account, now or later). The
// transaction goes to `link_required` (`pending_link.reason` `email_unverified`) and only an
// Email OTP to THAT address, on the same transaction, lets the sign-in create the account.

let fake: FakeProviders
let op: Awaited<ReturnType<typeof startOidcProvider>>
let smtp: SmtpSink
let app: TestApp
let b: Bootstrapped
let client: FlowClient
let origin: string

beforeAll(async () => {
  fake = await startFakeProviders()
  op = await startOidcProvider({ clientId: "authservice-rp", clientSecret: "op-client-secret" })
  smtp = await startSmtpSink()
  app = await startApp({ worker: true, env: { ...socialEnv(fake), SMTP_URL: smtp.url } })
  b = await app.bootstrap()
  client = await registerClient(app, b)
  origin = `http://${b.interaction_domain}`
  await connectFake(app, b, fake, "microsoft")
  await connectFake(app, b, fake, "google")
  const sso = await createConnection(app, b, {
    provider: "generic_oidc",
    provider_key: "corp-sso",
    provider_client_id: "authservice-rp",
    provider_client_secret: "op-client-secret",
    issuer: op.issuer,
  })
  op.addRedirectUri(sso.callback_url)
})
afterAll(async () => {
  await app?.close()
  await op?.close()
  await fake?.close()
  await smtp?.close()
})

const view = async (txn: Transaction) => (await publicApi(app, b, `/auth/transactions/${txn.id}`)).json
const usersWith = (email: string) => countRows(app, "users", "email_normalized = $1", [email])
const identitiesOf = (sub: string) =>
  query<{ id: string; user_id: string; provider: string }>(
    app,
    "select id, user_id, provider from identities where provider_subject = $1",
    [sub],
  )
const eventsAbout = async (type: string, userId: string) =>
  (await eventsOf(app, b.environment_id, type)).filter((e) => e.payload.userId === userId).map((e) => e.payload)

/** A Microsoft login (custom UI, redirect mode) for an account whose `email` Microsoft does not vouch for (no `xms_edov`). */
const microsoftWithoutEdov = async (sub: string, email: string) => {
  // `email_verified` is no Microsoft claim: only `xms_edov` counts, so this is ignored too.
  fake.setUser("microsoft", {
    sub,
    email,
    email_verified: true,
    name: "Mallory Msft",
    tid: "72f988bf-86f1-41af-91ab-2d7cd011db47",
  })
  const txn = await startTransaction(app, b, client)
  const start = await startSocial(app, b, txn.id, "microsoft")
  expect(start.status, start.text).toBe(200)
  const callback = await requestUrl(app, (await fake.visit(start.json.authorization_url)).location!)
  expect(callback.status).toBe(302)
  // The completion proof comes already at link_required: `complete` after the address proof needs it.
  const proof = socialProofOf(callback)
  expect(callback.headers["location"]).toBe(
    `${origin}/login/social/return?tx=${txn.id}&social=link_required&social_proof=${proof}`,
  )
  return { ...txn, proof }
}

/** Email OTP on the transaction to `email`; returns the verify answer. */
const proveAddress = async (txn: Transaction, email: string) => {
  const started = await publicApi(app, b, `/auth/transactions/${txn.id}/email/start`, { body: { email } })
  expect(started.status, started.text).toBe(202)
  expect((await view(txn)).status).toBe("link_required")
  const code = await smtp.waitForCode(email)
  return publicApi(app, b, `/auth/transactions/${txn.id}/email/verify`, {
    body: { challenge_id: started.json.challenge_id, code },
  })
}

describe("an address the provider did not verify, of nobody yet", () => {
  it("Microsoft without xms_edov: link_required, no user row; the Email OTP to that address creates the user (verified) with the identity", async () => {
    const email = uniqueEmail("ms-unverified")
    const txn = await microsoftWithoutEdov("ms-unv-1", email)
    const v = await view(txn)
    expect(v.status).toBe("link_required")
    expect(v.pending_link).toEqual({
      provider: "microsoft",
      masked_email: expect.stringMatching(/^m\*\*\*@e\*\*\*\.com$/),
      email_verified_by_provider: false,
      reason: "email_unverified",
      proof_methods: ["email_otp"],
    })
    // nothing exists before the proof, and the transaction cannot be completed
    expect(await usersWith(email)).toBe(0)
    expect(await identitiesOf("ms-unv-1")).toEqual([])
    const complete = await publicApi(app, b, `/auth/transactions/${txn.id}/complete`, { method: "POST" })
    expect([complete.status, complete.json.code]).toEqual([409, "transaction_not_authenticated"])
    // the code may only go to that address
    const other = await publicApi(app, b, `/auth/transactions/${txn.id}/email/start`, {
      body: { email: uniqueEmail("elsewhere") },
    })
    expect([other.status, other.json.code]).toEqual([400, "invalid_request"])

    const verified = await proveAddress(txn, email)
    expect(verified.status, verified.text).toBe(200)
    const after = await view(txn)
    expect([after.status, after.method, after.pending_link]).toEqual(["authenticated", "social", undefined])
    const [user] = await query<{ id: string; email: string; email_verified: boolean; name: string }>(
      app,
      "select id, email, email_verified, name from users where email_normalized = $1",
      [email],
    )
    expect(user).toMatchObject({ email, email_verified: true, name: "Mallory Msft" })
    const [identity] = await identitiesOf("ms-unv-1")
    expect(identity).toMatchObject({ user_id: user!.id, provider: "microsoft" })
    expect(await eventsAbout("user.created", user!.id)).toEqual([
      { userId: user!.id, method: "social", maskedEmail: expect.stringMatching(/^m\*\*\*@e\*\*\*\.com$/) },
    ])
    expect(await eventsAbout("identity.linked", user!.id)).toEqual([
      { userId: user!.id, identityId: identity!.id, provider: "microsoft" },
    ])
    expect(await eventsAbout("user.updated", user!.id)).toEqual([])

    const tokens = await completeAndExchange(app, b, client, txn, txn.proof)
    expect(tokens.access).toMatchObject({ sub: user!.id, amr: ["social"], acr: "urn:example-auth:loa:basic" })
    const expected = {
      userId: user!.id,
      sessionId: tokens.access["sid"],
      method: "social",
      clientId: client.client_id,
      ipPrefixHash: expect.stringMatching(/^[0-9a-f]{64}$/),
    }
    expect(await eventsAbout("session.created", user!.id)).toEqual([expected])
    expect(await eventsAbout("login.succeeded", user!.id)).toEqual([expected])
  })

  it("generic OIDC with email_verified false: no user before the proof; after the Email OTP the user exists, verified, with the identity", async () => {
    const email = uniqueEmail("sso-unverified")
    op.setAccount({ sub: "op-unverified-1", email, email_verified: false, name: "Sso Person" })
    const txn = await startTransaction(app, b, client)
    const start = await startSocial(app, b, txn.id, "generic_oidc")
    const back = await requestUrl(app, await throughProvider(start.json.authorization_url, origin))
    expect(back.headers["location"]).toBe(
      `${origin}/login/social/return?tx=${txn.id}&social=link_required&social_proof=${socialProofOf(back)}`,
    )
    expect((await view(txn)).pending_link).toMatchObject({
      provider: "corp-sso",
      email_verified_by_provider: false,
      reason: "email_unverified",
      proof_methods: ["email_otp"],
    })
    expect(await usersWith(email)).toBe(0)
    expect(await identitiesOf("op-unverified-1")).toEqual([])

    expect((await proveAddress(txn, email)).status).toBe(200)
    const [user] = await query<{ id: string; email_verified: boolean; name: string }>(
      app,
      "select id, email_verified, name from users where email_normalized = $1",
      [email],
    )
    expect(user).toMatchObject({ email_verified: true, name: "Sso Person" })
    const [identity] = await identitiesOf("op-unverified-1")
    expect(identity).toMatchObject({ user_id: user!.id, provider: "corp-sso" })
    expect(await eventsAbout("user.created", user!.id)).toEqual([
      { userId: user!.id, method: "social", maskedEmail: expect.any(String) },
    ])
    expect(await eventsAbout("identity.linked", user!.id)).toEqual([
      { userId: user!.id, identityId: identity!.id, provider: "corp-sso" },
    ])
    expect((await view(txn)).status).toBe("authenticated")
  })

  it("no passkey can stand in for the address proof (there is no account of that address to hold one)", async () => {
    // someone's own account with a passkey
    const stranger = await createUser(app, b, uniqueEmail("stranger"))
    const key = new SoftwareAuthenticator()
    const enrol = await startTransaction(app, b, client)
    await query(
      app,
      "update auth_transactions set status = 'authenticated', method = 'email_otp', user_id = $2, authenticated_at = $3 where id = $1",
      [enrol.id, stranger.id, new Date(app.now())],
    )
    const regOptions = await passkeyCall(app, b, enrol.id, "registration/options", {})
    expect(
      (
        await passkeyCall(app, b, enrol.id, "registration/verify", {
          credential: key.create(regOptions.json, { origin }),
        })
      ).status,
    ).toBe(200)

    const email = uniqueEmail("ms-victim")
    const txn = await microsoftWithoutEdov("ms-unv-3", email)
    const options = await passkeyCall(app, b, txn.id, "authentication/options", {})
    const refused = await passkeyCall(app, b, txn.id, "authentication/verify", {
      credential: key.get(options.json, { origin }),
    })
    expect([refused.status, refused.json.code]).toEqual([400, "webauthn_verification_failed"])
    expect((await view(txn)).status).toBe("link_required")
    expect(await identitiesOf("ms-unv-3")).toEqual([])
    expect(await usersWith(email)).toBe(0)
  })

  it("the takeover this prevents: the real owner signs up by Email OTP later and the provider account is not linked to them", async () => {
    const victim = uniqueEmail("victim")
    // the attacker's Microsoft account claims the victim's address (unverified) and gives up at the proof
    const attacker = await microsoftWithoutEdov("ms-attacker", victim)
    expect((await publicApi(app, b, `/auth/transactions/${attacker.id}/cancel`, { method: "POST" })).json.status).toBe(
      "failed",
    )
    expect(await usersWith(victim)).toBe(0)
    // the owner signs up with Email OTP: a fresh account with no identity
    const own = await startTransaction(app, b, client)
    const started = await publicApi(app, b, `/auth/transactions/${own.id}/email/start`, { body: { email: victim } })
    const code = await smtp.waitForCode(victim)
    expect(
      (
        await publicApi(app, b, `/auth/transactions/${own.id}/email/verify`, {
          body: { challenge_id: started.json.challenge_id, code },
        })
      ).status,
    ).toBe(200)
    const [owner] = await query<{ id: string }>(app, "select id from users where email_normalized = $1", [victim])
    expect(await countRows(app, "identities", "user_id = $1", [owner!.id])).toBe(0)
    // the attacker comes back: the account exists now, so its proof is required (and the attacker cannot give it)
    const again = await microsoftWithoutEdov("ms-attacker", victim)
    expect((await view(again)).pending_link).toMatchObject({
      reason: "existing_account",
      email_verified_by_provider: false,
      proof_methods: ["email_otp", "passkey"],
    })
    expect(await identitiesOf("ms-attacker")).toEqual([])
    const complete = await publicApi(app, b, `/auth/transactions/${again.id}/complete`, { method: "POST" })
    expect([complete.status, complete.json.code]).toEqual([409, "transaction_not_authenticated"])
  })

  it("new users blocked in the Environment: the login fails at once (nothing to prove an address for), nobody is created", async () => {
    const settings = `/v1/environments/${b.environment_id}/settings`
    expect(
      (await app.management(settings, { method: "PATCH", body: { new_user_creation_blocked: true } })).status,
    ).toBe(200)
    try {
      const email = uniqueEmail("ms-blocked-env")
      fake.setUser("microsoft", { sub: "ms-unv-5", email })
      const txn = await startTransaction(app, b, client)
      const start = await startSocial(app, b, txn.id, "microsoft")
      const callback = await requestUrl(app, (await fake.visit(start.json.authorization_url)).location!)
      expect(callback.headers["location"]).toBe(`${origin}/login/social/return?tx=${txn.id}&social=failed`)
      expect(await usersWith(email)).toBe(0)
    } finally {
      await app.management(settings, { method: "PATCH", body: { new_user_creation_blocked: false } })
    }
  })

  it("no address at all: the login fails (social_provider_error), nobody is created (unchanged)", async () => {
    fake.setUser("google", { sub: "g-no-email" })
    const users = await countRows(app, "users")
    const txn = await startTransaction(app, b, client)
    const start = await startSocial(app, b, txn.id, "google")
    const callback = await requestUrl(app, (await fake.visit(start.json.authorization_url)).location!)
    expect(callback.headers["location"]).toBe(`${origin}/login/social/return?tx=${txn.id}&social=failed`)
    expect((await view(txn)).status).toBe("failed")
    expect(await countRows(app, "users")).toBe(users)
    const failed = (await eventsOf(app, b.environment_id, "login.failed")).filter(
      (e) => e.payload.reason === "social_provider_error",
    )
    expect(failed.at(-1)!.payload).toEqual({
      method: "social",
      reason: "social_provider_error",
      clientId: client.client_id,
      ipPrefixHash: expect.stringMatching(/^[0-9a-f]{64}$/),
    })
  })
})

describe("an address the provider did not verify, of an existing Email OTP user", () => {
  it("is never linked without proof: link_required (existing_account); the account's Email OTP links it, nobody is created", async () => {
    const email = uniqueEmail("ms-existing")
    const user = await createUser(app, b, email)
    const txn = await microsoftWithoutEdov("ms-unv-6", email)
    expect((await view(txn)).pending_link).toEqual({
      provider: "microsoft",
      masked_email: expect.any(String),
      email_verified_by_provider: false,
      reason: "existing_account",
      proof_methods: ["email_otp", "passkey"],
    })
    expect(await identitiesOf("ms-unv-6")).toEqual([])
    expect(await usersWith(email)).toBe(1)
    expect((await proveAddress(txn, email)).status).toBe(200)
    const [identity] = await identitiesOf("ms-unv-6")
    expect(identity).toMatchObject({ user_id: user.id, provider: "microsoft" })
    expect(await eventsAbout("identity.linked", user.id)).toEqual([
      { userId: user.id, identityId: identity!.id, provider: "microsoft" },
    ])
    expect(await eventsAbout("user.created", user.id)).toHaveLength(1)
    expect(await usersWith(email)).toBe(1)
  })
})
