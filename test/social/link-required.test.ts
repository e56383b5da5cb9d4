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
import { connectFake, eventsOf, requestUrl, socialEnv, socialProofOf, startSocial } from "./support.js"

// Never link by email alone (spec: Social login rule 5): a provider address that belongs to
// an existing user without an identity of that provider sends the transaction to
// `link_required`; only a proof of the existing account (Email OTP to its address, or its
// passkey) on the same transaction links the identity and authenticates.

let fake: FakeProviders
let smtp: SmtpSink
let app: TestApp
let b: Bootstrapped
let client: FlowClient
let origin: string

beforeAll(async () => {
  fake = await startFakeProviders()
  smtp = await startSmtpSink()
  app = await startApp({ worker: true, env: { ...socialEnv(fake), SMTP_URL: smtp.url } })
  b = await app.bootstrap()
  client = await registerClient(app, b)
  origin = `http://${b.interaction_domain}`
  await connectFake(app, b, fake, "google")
})
afterAll(async () => {
  await app?.close()
  await fake?.close()
  await smtp?.close()
})

/** An existing user (registered by Email OTP earlier) and a Google login presenting the same address. */
const reachLinkRequired = async (sub: string) => {
  const email = uniqueEmail("existing")
  const user = await createUser(app, b, email)
  fake.setUser("google", { sub, email, email_verified: true, name: "Same Person" })
  const txn = await startTransaction(app, b, client)
  const start = await startSocial(app, b, txn.id, "google")
  const visit = await fake.visit(start.json.authorization_url)
  const callback = await requestUrl(app, visit.location!)
  expect(callback.status).toBe(302)
  const proof = socialProofOf(callback)
  expect(callback.headers["location"]).toBe(
    `${origin}/login/social/return?tx=${txn.id}&social=link_required&social_proof=${proof}`,
  )
  return { email, user, txn, proof }
}
const view = async (txn: Transaction) => (await publicApi(app, b, `/auth/transactions/${txn.id}`)).json
const identities = (sub: string) => countRows(app, "identities", "provider_subject = $1", [sub])

describe("link_required", () => {
  it("GET shows pending_link (provider, masked email); complete is 409 transaction_not_authenticated; nothing is linked", async () => {
    const { txn } = await reachLinkRequired("link-1")
    const v = await view(txn)
    expect(v.status).toBe("link_required")
    expect(v.pending_link).toEqual({
      provider: "google",
      masked_email: expect.stringMatching(/^e\*\*\*@e\*\*\*\.com$/),
      email_verified_by_provider: true,
      reason: "existing_account",
      proof_methods: ["email_otp", "passkey"],
    })
    expect(v.method).toBeUndefined()
    const complete = await publicApi(app, b, `/auth/transactions/${txn.id}/complete`, { method: "POST" })
    expect([complete.status, complete.json.code]).toEqual([409, "transaction_not_authenticated"])
    expect(await identities("link-1")).toBe(0)
    expect(
      (await eventsOf(app, b.environment_id, "identity.linked")).filter((e) => e.payload.provider === "google"),
    ).toHaveLength(0)
  })

  it("Email OTP to the account's address proves it: identity.linked, authenticated with method social, tokens amr social", async () => {
    const { email, user, txn, proof } = await reachLinkRequired("link-2")
    // another address cannot be used for the proof
    const other = await publicApi(app, b, `/auth/transactions/${txn.id}/email/start`, {
      body: { email: uniqueEmail("attacker") },
    })
    expect([other.status, other.json.code]).toEqual([400, "invalid_request"])
    const started = await publicApi(app, b, `/auth/transactions/${txn.id}/email/start`, { body: { email } })
    expect(started.status, started.text).toBe(202)
    expect((await view(txn)).status).toBe("link_required")
    const code = await smtp.waitForCode(email)
    const wrong = await publicApi(app, b, `/auth/transactions/${txn.id}/email/verify`, {
      body: { challenge_id: started.json.challenge_id, code: code === "000000" ? "111111" : "000000" },
    })
    expect([wrong.status, wrong.json.code]).toEqual([400, "invalid_code"])
    expect(await identities("link-2")).toBe(0)
    const verified = await publicApi(app, b, `/auth/transactions/${txn.id}/email/verify`, {
      body: { challenge_id: started.json.challenge_id, code },
    })
    expect(verified.status, verified.text).toBe(200)
    const v = await view(txn)
    expect([v.status, v.method, v.pending_link]).toEqual(["authenticated", "social", undefined])
    const [identity] = await query<{ id: string; user_id: string; provider: string }>(
      app,
      "select id, user_id, provider from identities where provider_subject = 'link-2'",
    )
    expect(identity).toMatchObject({ user_id: user.id, provider: "google" })
    const linked = (await eventsOf(app, b.environment_id, "identity.linked")).filter(
      (e) => e.payload.userId === user.id,
    )
    expect(linked.map((e) => e.payload)).toEqual([{ userId: user.id, identityId: identity!.id, provider: "google" }])
    // The account is proven, but the transaction is still the one whose provider answer came
    // back to a browser: complete needs that browser's completion proof too.
    const withoutProof = await publicApi(app, b, `/auth/transactions/${txn.id}/complete`, { method: "POST" })
    expect([withoutProof.status, withoutProof.json.code]).toEqual([400, "invalid_social_proof"])
    expect((await view(txn)).status).toBe("authenticated")
    const tokens = await completeAndExchange(app, b, client, txn, proof)
    expect(tokens.access).toMatchObject({ sub: user.id, amr: ["social"], acr: "urn:example-auth:loa:basic" })
    // the next Google login signs in directly
    const again = await startTransaction(app, b, client)
    const start = await startSocial(app, b, again.id, "google")
    await requestUrl(app, (await fake.visit(start.json.authorization_url)).location!)
    expect((await view(again)).status).toBe("authenticated")
  })

  it("the account's passkey proves it; another account's passkey does not", async () => {
    // a passkey for the existing user, registered on an authenticated transaction
    const { user, txn } = await reachLinkRequired("link-3")
    const owner = new SoftwareAuthenticator()
    const enrolTxn = await startTransaction(app, b, client)
    await query(
      app,
      "update auth_transactions set status = 'authenticated', method = 'email_otp', user_id = $2, authenticated_at = $3 where id = $1",
      [enrolTxn.id, user.id, new Date(app.now())],
    )
    const regOptions = await passkeyCall(app, b, enrolTxn.id, "registration/options", {})
    expect(
      (
        await passkeyCall(app, b, enrolTxn.id, "registration/verify", {
          credential: owner.create(regOptions.json, { origin }),
        })
      ).status,
    ).toBe(200)
    // someone else's passkey
    const stranger = await createUser(app, b, uniqueEmail("stranger"))
    const strangerKey = new SoftwareAuthenticator()
    const strangerTxn = await startTransaction(app, b, client)
    await query(
      app,
      "update auth_transactions set status = 'authenticated', method = 'email_otp', user_id = $2, authenticated_at = $3 where id = $1",
      [strangerTxn.id, stranger.id, new Date(app.now())],
    )
    const strangerOptions = await passkeyCall(app, b, strangerTxn.id, "registration/options", {})
    expect(
      (
        await passkeyCall(app, b, strangerTxn.id, "registration/verify", {
          credential: strangerKey.create(strangerOptions.json, { origin }),
        })
      ).status,
    ).toBe(200)

    const options1 = await passkeyCall(app, b, txn.id, "authentication/options", {})
    expect(options1.status, options1.text).toBe(200)
    expect((await view(txn)).status).toBe("link_required")
    const refused = await passkeyCall(app, b, txn.id, "authentication/verify", {
      credential: strangerKey.get(options1.json, { origin }),
    })
    expect([refused.status, refused.json.code]).toEqual([400, "webauthn_verification_failed"])
    expect((await view(txn)).status).toBe("link_required")
    expect(await identities("link-3")).toBe(0)

    const options2 = await passkeyCall(app, b, txn.id, "authentication/options", {})
    const ok = await passkeyCall(app, b, txn.id, "authentication/verify", {
      credential: owner.get(options2.json, { origin }),
    })
    expect(ok.status, ok.text).toBe(200)
    const v = await view(txn)
    expect([v.status, v.method]).toEqual(["authenticated", "social"])
    expect(await identities("link-3")).toBe(1)
  })

  it("cancel from link_required ends failed; nothing is linked and the pending identity cannot be used", async () => {
    const { email, txn } = await reachLinkRequired("link-4")
    const cancelled = await publicApi(app, b, `/auth/transactions/${txn.id}/cancel`, { method: "POST" })
    expect([cancelled.status, cancelled.json.status]).toEqual([200, "failed"])
    const start = await publicApi(app, b, `/auth/transactions/${txn.id}/email/start`, { body: { email } })
    expect([start.status, start.json.code]).toEqual([409, "invalid_transaction_state"])
    expect(await identities("link-4")).toBe(0)
  })
})
