import * as oidc from "openid-client"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, startApp, type TestApp } from "../support/app.js"
import { createClient, type LoginClientInfo, query, uniqueEmail } from "../login/support.js"
import { makeEnvironment } from "../support/tenancy.js"
import { type OpAccount, startOidcProvider, throughProvider } from "./oidc-provider.js"
import { createConnection, eventsOf, requestUrl, socialProofOf, startSocial } from "./support.js"

// Generic OIDC end to end against a real oidc-provider on loopback over HTTPS (test CA via
// NODE_EXTRA_CA_CERTS; loopback allowed by WEBHOOK_ALLOW_PRIVATE_TARGETS), with openid-client
// as the relying party of OUR issuer: authorize -> Hosted Login -> social start -> the OP ->
// our callback -> Hosted Login completes -> code exchange and ID token validation.

let op: Awaited<ReturnType<typeof startOidcProvider>>
let app: TestApp
let b: Bootstrapped
let client: LoginClientInfo
const RP_REDIRECT = "http://127.0.0.1:4999/callback"

beforeAll(async () => {
  op = await startOidcProvider({ clientId: "authservice-rp", clientSecret: "op-client-secret" })
  app = await startApp({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" } })
  b = await app.bootstrap()
  client = await createClient(app, b, { redirect_uris: [RP_REDIRECT] })
  const connection = await createConnection(app, b, {
    provider: "generic_oidc",
    provider_key: "corp-sso",
    provider_client_id: "authservice-rp",
    provider_client_secret: "op-client-secret",
    issuer: op.issuer,
  })
  op.addRedirectUri(connection.callback_url)
})
afterAll(async () => {
  await app?.close()
  await op?.close()
})

const account = (label: string): OpAccount => ({
  sub: `op-${label}-${Math.random().toString(36).slice(2, 8)}`,
  email: uniqueEmail(label),
  email_verified: true,
  name: "Corp User",
})

describe("generic OIDC (oidc-provider over HTTPS)", () => {
  it("Hosted Login: openid-client RP -> our authorize -> social start -> OP -> callback -> /login -> complete -> code exchange", async () => {
    const user = account("hosted")
    op.setAccount(user)
    const config = await oidc.discovery(new URL(b.issuer), client.client_id, undefined, oidc.None(), {
      execute: [oidc.allowInsecureRequests],
    })
    const verifier = oidc.randomPKCECodeVerifier()
    const state = oidc.randomState()
    const nonce = oidc.randomNonce()
    const authorize = oidc.buildAuthorizationUrl(config, {
      redirect_uri: RP_REDIRECT,
      scope: "openid email profile",
      state,
      nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    })
    // our issuer -> Hosted Login hand-off (sets the binding cookie)
    const toHandoff = await requestUrl(app, authorize.href)
    expect(toHandoff.status).toBe(302)
    const handoff = await requestUrl(app, toHandoff.headers["location"] as string)
    expect(handoff.status).toBe(200)
    const cookie = (handoff.headers["set-cookie"] as Array<string>)[0]!.split(";")[0]!
    const txnId = /data-transaction-id="([^"]+)"/.exec(handoff.text)![1]!
    expect(handoff.text).toContain('src="/login/assets/social.js"')
    // what the page's "Continue with single sign-on" button does
    const start = await app.request(b.interaction_domain, `/v1/auth/transactions/${txnId}/social/generic_oidc/start`, {
      method: "POST",
      headers: { cookie },
    })
    expect(start.status, start.text).toBe(200)
    expect(start.json.authorization_url.startsWith(`${op.issuer}/auth?`)).toBe(true)
    const callbackUrl = await throughProvider(start.json.authorization_url, `http://${b.interaction_domain}`)
    expect(callbackUrl.startsWith(`http://${b.interaction_domain}/v1/auth/social/generic_oidc/callback?`)).toBe(true)
    expect(new URL(callbackUrl).searchParams.get("iss")).toBe(op.issuer)
    // the callback needs no cookie (the signed state names the transaction); a Hosted Login
    // transaction then finishes only in the browser holding its cookie
    const back = await requestUrl(app, callbackUrl)
    expect(back.status, back.text).toBe(302)
    const continueUrl = back.headers["location"] as string
    expect(continueUrl).toMatch(
      new RegExp(
        `^http://${b.interaction_domain.replace(/\./g, "\\.")}/login/social/continue\\?handoff=[A-Za-z0-9_-]{43}$`,
      ),
    )
    const continued = await requestUrl(app, continueUrl, { headers: { cookie } })
    expect(continued.status, continued.text).toBe(302)
    expect(continued.headers["location"]).toBe(`http://${b.interaction_domain}/login`)
    const page = await app.request(b.interaction_domain, "/login", { headers: { cookie } })
    expect(page.text).toContain('data-status="authenticated"')
    // what the page's script does for an authenticated transaction (with `iss`, RFC 9207)
    // Hosted Login is bound by its cookie, not by a completion proof: none is issued, and
    // without the cookie the transaction does not exist for the caller (proof or not).
    expect(await query(app, "select social_proof_hash from auth_transactions where id = $1", [txnId])).toEqual([
      { social_proof_hash: null },
    ])
    const cookieless = await app.request(b.interaction_domain, `/v1/auth/transactions/${txnId}/complete`, {
      method: "POST",
      body: { social_proof: "x".repeat(43) },
    })
    expect([cookieless.status, cookieless.json.code]).toEqual([404, "auth_transaction_not_found"])
    const done = await app.request(b.interaction_domain, `/v1/auth/transactions/${txnId}/complete`, {
      method: "POST",
      headers: { cookie },
    })
    expect(done.status, done.text).toBe(200)
    const tokens = await oidc.authorizationCodeGrant(
      config,
      new URL(
        `${RP_REDIRECT}?code=${encodeURIComponent(done.json.authorization_code)}&state=${encodeURIComponent(done.json.state)}&iss=${encodeURIComponent(b.issuer)}`,
      ),
      { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true },
    )
    const claims = tokens.claims()!
    const [row] = await query<{ id: string; email_verified: boolean; name: string }>(
      app,
      "select id, email_verified, name from users where email_normalized = $1",
      [user.email],
    )
    expect(claims).toMatchObject({
      iss: b.issuer,
      sub: row!.id,
      amr: ["social"],
      acr: "urn:example-auth:loa:basic",
      nonce,
      email: user.email,
      email_verified: true,
    })
    expect(row).toMatchObject({ email_verified: true, name: "Corp User" })
    const linked = (await eventsOf(app, b.environment_id, "identity.linked")).filter(
      (e) => e.payload.userId === row!.id,
    )
    expect(linked.map((e) => e.payload.provider)).toEqual(["corp-sso"])
    const [identity] = await query<{ provider_subject: string }>(
      app,
      "select provider_subject from identities where user_id = $1",
      [row!.id],
    )
    expect(identity!.provider_subject).toBe(user.sub)
  })

  it("a managed connection returns to the Canonical Issuer's /e/{environmentId}/v1 callback (custom UI, redirect mode)", async () => {
    const env2 = await makeEnvironment(app, b.workspace_id, b.project_id)
    const b2 = {
      ...b,
      environment_id: env2,
      interaction_domain: `env-${env2.slice(4)}.login.localhost:${app.port}`,
      issuer: `http://localhost:${app.port}/e/${env2}`,
    }
    const client2 = await createClient(app, b2)
    const connection = await createConnection(app, b2, {
      provider: "generic_oidc",
      mode: "managed",
      provider_key: "corp-managed",
      provider_client_id: "authservice-rp",
      provider_client_secret: "op-client-secret",
      issuer: op.issuer,
    })
    expect(connection.callback_url).toBe(`${b2.issuer}/v1/auth/social/generic_oidc/callback`)
    op.addRedirectUri(connection.callback_url)
    const user = account("managed")
    op.setAccount(user)
    const created = await app.request(b2.interaction_domain, "/v1/auth/transactions", {
      body: {
        client_id: client2.client_id,
        redirect_uri: client2.redirect_uri,
        code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        code_challenge_method: "S256",
        state: "s1",
        nonce: "n1",
        scope: "openid email",
      },
    })
    const txnId = created.json.transaction_id as string
    const start = await startSocial(app, b2, txnId, "generic_oidc")
    expect(new URL(start.json.authorization_url).searchParams.get("redirect_uri")).toBe(connection.callback_url)
    const callbackUrl = await throughProvider(start.json.authorization_url, b2.issuer)
    expect(callbackUrl.startsWith(`${b2.issuer}/v1/auth/social/generic_oidc/callback?`)).toBe(true)
    const back = await requestUrl(app, callbackUrl)
    expect(back.status, back.text).toBe(302)
    const proof = socialProofOf(back)
    expect(back.headers["location"]).toBe(
      `http://${b2.interaction_domain}/login/social/return?tx=${txnId}&social=completed&social_proof=${proof}`,
    )
    // the return page sends the browser on to the client's registered redirect URI
    const returned = await requestUrl(app, back.headers["location"] as string)
    expect(returned.status).toBe(302)
    expect(returned.headers["location"]).toBe(
      `${client2.redirect_uri}?tx=${txnId}&state=s1&social=completed&social_proof=${proof}`,
    )
    const view = await app.request(b2.interaction_domain, `/v1/auth/transactions/${txnId}`)
    expect([view.json.status, view.json.method]).toEqual(["authenticated", "social"])
  })

  it("a code delivered with another login's state is refused (its PKCE verifier does not match at the OP): the transaction fails", async () => {
    op.setAccount(account("replay"))
    const t1 = await app.request(b.interaction_domain, "/v1/auth/transactions", {
      body: {
        client_id: client.client_id,
        redirect_uri: RP_REDIRECT,
        code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        code_challenge_method: "S256",
        state: "s1",
        nonce: "n1",
        scope: "openid email",
      },
    })
    const t2 = await app.request(b.interaction_domain, "/v1/auth/transactions", {
      body: {
        client_id: client.client_id,
        redirect_uri: RP_REDIRECT,
        code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        code_challenge_method: "S256",
        state: "s2",
        nonce: "n2",
        scope: "openid email",
      },
    })
    const s1 = await startSocial(app, b, t1.json.transaction_id, "generic_oidc")
    const s2 = await startSocial(app, b, t2.json.transaction_id, "generic_oidc")
    const cb1 = new URL(await throughProvider(s1.json.authorization_url, `http://${b.interaction_domain}`))
    // the code of login 1 delivered with the state of login 2: PKCE and nonce no longer match
    const forged = new URL(cb1.href)
    forged.searchParams.set("state", new URL(s2.json.authorization_url).searchParams.get("state")!)
    const res = await requestUrl(app, forged.href)
    expect(res.status).toBe(302)
    expect(
      (await app.request(b.interaction_domain, `/v1/auth/transactions/${t2.json.transaction_id}`)).json.status,
    ).toBe("failed")
    const failed = (await eventsOf(app, b.environment_id, "login.failed")).filter(
      (e) => e.payload.reason === "social_provider_error",
    )
    expect(failed.length).toBeGreaterThan(0)
  })

  it("without WEBHOOK_ALLOW_PRIVATE_TARGETS a loopback issuer is not reachable: 503 provider_unavailable, no URL", async () => {
    const strict = await startApp()
    try {
      const b3 = await strict.bootstrap()
      const client3 = await createClient(strict, b3)
      await createConnection(strict, b3, {
        provider: "generic_oidc",
        provider_key: "corp-sso",
        provider_client_id: "authservice-rp",
        provider_client_secret: "op-client-secret",
        issuer: op.issuer,
      })
      const created = await strict.request(b3.interaction_domain, "/v1/auth/transactions", {
        body: {
          client_id: client3.client_id,
          redirect_uri: client3.redirect_uri,
          code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
          code_challenge_method: "S256",
          state: "s",
          nonce: "n",
          scope: "openid email",
        },
      })
      const res = await startSocial(strict, b3, created.json.transaction_id, "generic_oidc")
      expect([res.status, res.json.code]).toEqual([503, "provider_unavailable"])
      expect(res.json.authorization_url).toBeUndefined()
    } finally {
      await strict.close()
    }
  })

  it("Hosted Login: the provider's answer opened in another browser (a forwarded link) is refused; nothing changes", async () => {
    const victim = account("victim")
    op.setAccount(victim)
    const config = await oidc.discovery(new URL(b.issuer), client.client_id, undefined, oidc.None(), {
      execute: [oidc.allowInsecureRequests],
    })
    const authorize = oidc.buildAuthorizationUrl(config, {
      redirect_uri: RP_REDIRECT,
      scope: "openid email",
      state: "attacker-state",
      nonce: "attacker-nonce",
      code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
      code_challenge_method: "S256",
    })
    // the attacker's browser: its own Hosted Login transaction and cookie
    const handoff = await requestUrl(app, (await requestUrl(app, authorize.href)).headers["location"] as string)
    const attackerCookie = (handoff.headers["set-cookie"] as Array<string>)[0]!.split(";")[0]!
    const txnId = /data-transaction-id="([^"]+)"/.exec(handoff.text)![1]!
    const start = await app.request(b.interaction_domain, `/v1/auth/transactions/${txnId}/social/generic_oidc/start`, {
      method: "POST",
      headers: { cookie: attackerCookie },
    })
    // the victim opens the forwarded provider URL, is signed in at the provider, comes back to us
    const callbackUrl = await throughProvider(start.json.authorization_url, `http://${b.interaction_domain}`)
    const back = await requestUrl(app, callbackUrl)
    const continueUrl = back.headers["location"] as string
    const refused = await requestUrl(app, continueUrl, {
      headers: { cookie: "authservice_login=the-victims-own-login-cookie" },
    })
    expect(refused.status).toBe(400)
    expect(refused.text).toContain('data-error="social_other_browser"')
    // the refusal used the one-time token: even the attacker's own cookie gets nothing now
    const late = await requestUrl(app, continueUrl, { headers: { cookie: attackerCookie } })
    expect(late.text).toContain('data-error="login_link_expired"')
    const view = await app.request(b.interaction_domain, `/v1/auth/transactions/${txnId}`, {
      headers: { cookie: attackerCookie },
    })
    expect(view.json.status).toBe("challenge_issued")
    expect(await query(app, "select id from users where email_normalized = $1", [victim.email])).toEqual([])
  })
})
