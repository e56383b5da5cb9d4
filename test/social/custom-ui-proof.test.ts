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
import { connectFake, requestUrl, socialEnv, startSocial, transactionView } from "./support.js"

// Custom-UI social login is bound to the browser that came back from the provider
// (docs/decisions/social-login.md, Social login: "Custom UI: the completion proof"). The threat: an attacker
// creates a transaction with a public client's id and its own PKCE challenge, starts a social
// login and sends the provider's authorization URL to a victim already signed in at the
// provider; the victim's browser comes back through our callback, which signs the VICTIM in
// on the ATTACKER's transaction. Only the browser that came back gets the one-time
// `social_proof` (at the client's registered redirect URI), and `/complete` of a social
// transaction needs it.

let fake: FakeProviders
let app: TestApp
let b: Bootstrapped
let spa: LoginClientInfo
let native: LoginClientInfo
const SPA_RETURN = "http://127.0.0.1:4999/callback"
const NATIVE_RETURN = "com.example.app:/oauth/callback"

beforeAll(async () => {
  fake = await startFakeProviders()
  app = await startApp({ env: socialEnv(fake) })
  b = await app.bootstrap()
  spa = await createClient(app, b, { redirect_uris: [SPA_RETURN] })
  native = await createClient(app, b, {
    client_type: "react_native",
    redirect_uris: [NATIVE_RETURN],
    allowed_origins: [],
  })
  await connectFake(app, b, fake, "google")
  await connectFake(app, b, fake, "microsoft")
})
afterAll(async () => {
  await app?.close()
  await fake?.close()
})

/** Whoever creates it keeps the PKCE verifier; the public client's id and redirect URI are public. */
const newTransaction = async (client: LoginClientInfo, overrides: Record<string, unknown> = {}) => {
  const { verifier, challenge } = pkce()
  const res = await app.request(b.interaction_domain, "/v1/auth/transactions", {
    body: transactionBody(client, { code_challenge: challenge, ...overrides }),
  })
  expect(res.status, res.text).toBe(201)
  return { id: res.json.transaction_id as string, verifier }
}

const ourHosts = () => [b.interaction_domain, new URL(b.issuer).host]

/**
 * Plays a browser from the provider's authorization URL: the provider (signed in, no prompt),
 * our callback, and every redirect of ours until the browser leaves for the client's
 * registered redirect URI. Returns that final URL.
 */
const browserThroughProvider = async (authorizationUrl: string) => {
  const visit = await fake.visit(authorizationUrl)
  expect(visit.status).toBe(302)
  let url = visit.location!
  for (let hop = 0; hop < 5; hop++) {
    const u = new URL(url)
    if (!ourHosts().includes(u.host)) return url
    const res = await requestUrl(app, url)
    // A page of ours that does not send the browser on (the end of the way there).
    if (res.status === 200) return url
    expect(res.status, res.text).toBe(302)
    expect(res.headers["cache-control"]).toBe("no-store")
    expect(res.headers["referrer-policy"]).toBe("no-referrer")
    url = res.headers["location"] as string
  }
  throw new Error("too many redirects")
}

const complete = (id: string, body?: unknown) =>
  app.request(b.interaction_domain, `/v1/auth/transactions/${id}/complete`, {
    method: "POST",
    ...(body === undefined ? {} : { body }),
  })

const exchange = (client: LoginClientInfo, code: string, verifier: string) =>
  app.issuer(b.environment_id, "/oauth2/token", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code,
      redirect_uri: client.redirect_uri,
      code_verifier: verifier,
      client_id: client.client_id,
    }).toString(),
  })

const codesOf = (transactionId: string) => countRows(app, "authorization_codes", "transaction_id = $1", [transactionId])

/** The victim: an existing account signed in at Google. */
const victimAtGoogle = async (label: string) => {
  const email = uniqueEmail(label)
  const sub = `g-${label}-${Math.random().toString(36).slice(2, 8)}`
  // The victim's account exists (a first Google login earlier, through its own transaction).
  fake.setUser("google", { sub, email, email_verified: true, name: "Victim" })
  const own = await newTransaction(spa)
  const start = await startSocial(app, b, own.id, "google")
  await browserThroughProvider(start.json.authorization_url)
  const [user] = await query<{ id: string }>(app, "select id from users where email_normalized = $1", [email])
  expect(user).toBeDefined()
  return { email, sub, userId: user!.id }
}

describe("the exploit: an attacker's transaction completed by a victim's browser", () => {
  it("redirect mode: the attacker polls authenticated but cannot complete without the proof, which only the victim's browser got", async () => {
    const victim = await victimAtGoogle("victim-redirect")
    const attacker = await newTransaction(spa, { state: "attacker-state" })
    const start = await startSocial(app, b, attacker.id, "google")
    expect(start.status, start.text).toBe(200)
    // The victim opens the forwarded link; the provider answers without a prompt.
    fake.setUser("google", { sub: victim.sub, email: victim.email, email_verified: true })
    const landed = new URL(await browserThroughProvider(start.json.authorization_url))

    // The attacker polls: the transaction is authenticated as the victim ...
    const view = await transactionView(app, b, attacker.id)
    expect([view.status, view.method]).toEqual(["authenticated", "social"])
    // ... but complete without the proof, with a guessed one or with an empty body is refused and changes nothing.
    for (const body of [undefined, {}, { social_proof: "guessed-proof" }, { social_proof: "A".repeat(43) }]) {
      const refused = await complete(attacker.id, body)
      expect([refused.status, refused.json.code], JSON.stringify(body)).toEqual([400, "invalid_social_proof"])
      expect(refused.headers["content-type"]).toBe("application/problem+json")
    }
    // The proof travelled only to the client's registered redirect URI, in the victim's browser.
    expect(landed.origin + landed.pathname).toBe(SPA_RETURN)
    expect(landed.searchParams.get("social_proof")).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect((await transactionView(app, b, attacker.id)).status).toBe("authenticated")
    expect(await codesOf(attacker.id)).toBe(0)
    // Nor can the attacker enrol its own passkey on the victim's account through the transaction.
    const passkey = await app.request(
      b.interaction_domain,
      `/v1/auth/transactions/${attacker.id}/passkeys/registration/options`,
      { method: "POST", body: {} },
    )
    expect([passkey.status, passkey.json.code]).toEqual([400, "invalid_social_proof"])
    expect(await countRows(app, "webauthn_challenges", "user_id = $1", [victim.userId])).toBe(0)
    // The refusals are audited (a signal of the attack).
    expect(
      await countRows(app, "audit_events", "subject_id = $1 and action = 'login.social_proof_refused'", [attacker.id]),
    ).toBe(5)
  })

  it("native_return: the same; the proof reaches only the app the victim's browser returns to", async () => {
    const victim = await victimAtGoogle("victim-native")
    const attacker = await newTransaction(native, { response_mode: "native_return", state: "attacker-native" })
    const start = await startSocial(app, b, attacker.id, "google")
    fake.setUser("google", { sub: victim.sub, email: victim.email, email_verified: true })
    const landed = new URL(await browserThroughProvider(start.json.authorization_url))
    expect((await transactionView(app, b, attacker.id)).status).toBe("authenticated")
    const refused = await complete(attacker.id)
    expect([refused.status, refused.json.code]).toEqual([400, "invalid_social_proof"])
    expect(await codesOf(attacker.id)).toBe(0)
    expect(landed.href.startsWith(`${NATIVE_RETURN}?`)).toBe(true)
    expect(landed.searchParams.get("social_proof")).toMatch(/^[A-Za-z0-9_-]{43}$/)
  })
})

describe("the legitimate flow carries the proof", () => {
  it("redirect mode: the browser returns to the Interaction Domain, then to the registered redirect URI with tx, state, social and social_proof; complete with it gives tokens", async () => {
    const email = uniqueEmail("legit-redirect")
    fake.setUser("google", { sub: "g-legit-redirect", email, email_verified: true })
    const txn = await newTransaction(spa, { state: "app-state-1" })
    const start = await startSocial(app, b, txn.id, "google")
    const callback = await requestUrl(app, (await fake.visit(start.json.authorization_url)).location!)
    expect(callback.status).toBe(302)
    const toReturn = new URL(callback.headers["location"] as string)
    expect(toReturn.origin + toReturn.pathname).toBe(`http://${b.interaction_domain}/login/social/return`)
    expect([...toReturn.searchParams.keys()]).toEqual(["tx", "social", "social_proof"])
    const returned = await requestUrl(app, toReturn.href)
    expect(returned.status).toBe(302)
    const proof = toReturn.searchParams.get("social_proof")!
    expect(returned.headers["location"]).toBe(
      `${SPA_RETURN}?tx=${txn.id}&state=app-state-1&social=completed&social_proof=${proof}`,
    )
    // only the hash is kept
    const [row] = await query<{ social_proof_hash: string }>(
      app,
      "select social_proof_hash from auth_transactions where id = $1",
      [txn.id],
    )
    expect(row!.social_proof_hash).toMatch(/^[0-9a-f]{64}$/)
    expect(row!.social_proof_hash).not.toContain(proof)

    const done = await complete(txn.id, { social_proof: proof })
    expect(done.status, done.text).toBe(200)
    expect(done.json.state).toBe("app-state-1")
    const tokens = await exchange(spa, done.json.authorization_code, txn.verifier)
    expect(tokens.status, tokens.text).toBe(200)
    expect(decodeJwt(tokens.json.access_token)).toMatchObject({ amr: ["social"] })
  })

  it("native_return: the callback sends the proof straight to the registered redirect URI", async () => {
    fake.setUser("google", { sub: "g-legit-native", email: uniqueEmail("legit-native"), email_verified: true })
    const txn = await newTransaction(native, { response_mode: "native_return", state: "native-state" })
    const start = await startSocial(app, b, txn.id, "google")
    const callback = await requestUrl(app, (await fake.visit(start.json.authorization_url)).location!)
    const landed = new URL(callback.headers["location"] as string)
    const proof = landed.searchParams.get("social_proof")!
    expect(callback.headers["location"]).toBe(
      `${NATIVE_RETURN}?tx=${txn.id}&state=native-state&social=completed&social_proof=${proof}`,
    )
    const done = await complete(txn.id, { social_proof: proof })
    expect(done.status, done.text).toBe(200)
    expect((await exchange(native, done.json.authorization_code, txn.verifier)).status).toBe(200)
  })

  it("a failed login goes to the registered redirect URI too, with social=failed and no proof", async () => {
    fake.refuseNext("google")
    const txn = await newTransaction(spa, { state: "failed-state" })
    const start = await startSocial(app, b, txn.id, "google")
    expect(await browserThroughProvider(start.json.authorization_url)).toBe(
      `${SPA_RETURN}?tx=${txn.id}&state=failed-state&social=failed`,
    )
    const [row] = await query<{ social_proof_hash: string | null }>(
      app,
      "select social_proof_hash from auth_transactions where id = $1",
      [txn.id],
    )
    expect(row!.social_proof_hash).toBeNull()
  })

  it("the proof is single use: a second complete is 409 transaction_not_authenticated and the hash is gone", async () => {
    fake.setUser("google", { sub: "g-single-use", email: uniqueEmail("single"), email_verified: true })
    const txn = await newTransaction(spa)
    const start = await startSocial(app, b, txn.id, "google")
    const proof = new URL(await browserThroughProvider(start.json.authorization_url)).searchParams.get("social_proof")!
    expect((await complete(txn.id, { social_proof: proof })).status).toBe(200)
    const again = await complete(txn.id, { social_proof: proof })
    expect([again.status, again.json.code]).toEqual([409, "transaction_not_authenticated"])
    expect(await query(app, "select social_proof_hash from auth_transactions where id = $1", [txn.id])).toEqual([
      { social_proof_hash: null },
    ])
    expect(await codesOf(txn.id)).toBe(1)
  })

  it("two completes racing with the right proof: one code", async () => {
    fake.setUser("google", { sub: "g-race", email: uniqueEmail("race"), email_verified: true })
    const txn = await newTransaction(spa)
    const start = await startSocial(app, b, txn.id, "google")
    const proof = new URL(await browserThroughProvider(start.json.authorization_url)).searchParams.get("social_proof")!
    const answers = await Promise.all([
      complete(txn.id, { social_proof: proof }),
      complete(txn.id, { social_proof: proof }),
    ])
    expect(answers.map((r) => r.status).sort()).toEqual([200, 409])
    expect(await codesOf(txn.id)).toBe(1)
  })

  it("the proof of another transaction is refused; the right one still works", async () => {
    fake.setUser("google", { sub: "g-other-a", email: uniqueEmail("other-a"), email_verified: true })
    const a = await newTransaction(spa)
    const proofA = new URL(
      await browserThroughProvider((await startSocial(app, b, a.id, "google")).json.authorization_url),
    ).searchParams.get("social_proof")!
    fake.setUser("google", { sub: "g-other-b", email: uniqueEmail("other-b"), email_verified: true })
    const other = await newTransaction(spa)
    const proofB = new URL(
      await browserThroughProvider((await startSocial(app, b, other.id, "google")).json.authorization_url),
    ).searchParams.get("social_proof")!
    const refused = await complete(other.id, { social_proof: proofA })
    expect([refused.status, refused.json.code]).toEqual([400, "invalid_social_proof"])
    expect((await transactionView(app, b, other.id)).status).toBe("authenticated")
    expect((await complete(other.id, { social_proof: proofB })).status).toBe(200)
    expect((await complete(a.id, { social_proof: proofA })).status).toBe(200)
  })

  it("a wrongly shaped complete body is 400 invalid_request_body; other methods still complete without a body", async () => {
    fake.setUser("google", { sub: "g-shape", email: uniqueEmail("shape"), email_verified: true })
    const txn = await newTransaction(spa)
    const proof = new URL(
      await browserThroughProvider((await startSocial(app, b, txn.id, "google")).json.authorization_url),
    ).searchParams.get("social_proof")!
    for (const body of [{ social_proof: 7 }, { social_proof: proof, extra: true }, [proof]]) {
      const res = await complete(txn.id, body)
      expect([res.status, res.json.code], JSON.stringify(body)).toEqual([400, "invalid_request_body"])
    }
    expect((await transactionView(app, b, txn.id)).status).toBe("authenticated")
    // an Email OTP transaction (here marked authenticated directly) needs no proof
    const otp = await newTransaction(spa)
    await query(
      app,
      "update auth_transactions set status = 'authenticated', method = 'email_otp', user_id = (select user_id from auth_transactions where id = $2), authenticated_at = $3 where id = $1",
      [otp.id, txn.id, new Date(app.now())],
    )
    expect((await complete(otp.id)).status).toBe(200)
  })

  it("passkey registration on a social transaction needs the proof too (options and verify)", async () => {
    fake.setUser("google", { sub: "g-passkey", email: uniqueEmail("passkey"), email_verified: true })
    const txn = await newTransaction(spa)
    const proof = new URL(
      await browserThroughProvider((await startSocial(app, b, txn.id, "google")).json.authorization_url),
    ).searchParams.get("social_proof")!
    const path = `/v1/auth/transactions/${txn.id}/passkeys/registration`
    const without = await app.request(b.interaction_domain, `${path}/options`, { method: "POST" })
    expect([without.status, without.json.code]).toEqual([400, "invalid_social_proof"])
    const verifyWithout = await app.request(b.interaction_domain, `${path}/verify`, {
      method: "POST",
      body: {
        credential: {
          id: "x",
          rawId: "x",
          type: "public-key",
          response: { clientDataJSON: "x", attestationObject: "x" },
        },
      },
    })
    expect([verifyWithout.status, verifyWithout.json.code]).toEqual([400, "invalid_social_proof"])
    const withProof = await app.request(b.interaction_domain, `${path}/options`, {
      method: "POST",
      body: { social_proof: proof },
    })
    expect(withProof.status, withProof.text).toBe(200)
    expect(withProof.json.challenge).toEqual(expect.any(String))
  })
})

describe("the return page on the Interaction Domain", () => {
  it("forwards only to the transaction's registered redirect URI, and a proof only when it is the transaction's", async () => {
    fake.setUser("google", { sub: "g-return", email: uniqueEmail("return"), email_verified: true })
    const txn = await newTransaction(spa, { state: "return-state" })
    const start = await startSocial(app, b, txn.id, "google")
    const callback = await requestUrl(app, (await fake.visit(start.json.authorization_url)).location!)
    const toReturn = new URL(callback.headers["location"] as string)
    const base = `http://${b.interaction_domain}/login/social/return`
    const forged = await app.request(
      b.interaction_domain,
      `/login/social/return?tx=${txn.id}&social=completed&social_proof=forged`,
    )
    expect(forged.status).toBe(302)
    expect(forged.headers["location"]).toBe(`${SPA_RETURN}?tx=${txn.id}&state=return-state&social=completed`)
    // an unknown transaction (or none): the static page, no redirect
    const unknown = await requestUrl(app, `${base}?tx=txn_unknown&social=completed`)
    expect(unknown.status).toBe(200)
    expect(unknown.text).toContain('data-social="failed"')
    // the real one still forwards the proof
    expect((await requestUrl(app, toReturn.href)).headers["location"]).toContain(
      `&social_proof=${toReturn.searchParams.get("social_proof")}`,
    )
  })
})

describe("providers ask for the account chooser", () => {
  it("Google and Microsoft authorization URLs carry prompt=select_account", async () => {
    for (const provider of ["google", "microsoft"]) {
      const txn = await newTransaction(spa)
      const start = await startSocial(app, b, txn.id, provider)
      expect(start.status, start.text).toBe(200)
      expect(new URL(start.json.authorization_url).searchParams.get("prompt"), provider).toBe("select_account")
    }
  })
})
