import { generateKeyPairSync } from "node:crypto"
import { exportJWK } from "jose"
import { expect } from "vitest"
import type { Bootstrapped, TestApp } from "../support/app.js"
import type { TestResponse } from "../support/http.js"
import { query } from "../login/support.js"
import type { FakeProvider, FakeProviders } from "./fake-providers.js"

/** Development switches every social test app runs with: loopback providers, the fake's sockets. */
export const socialEnv = (fake: { hostsSetting: string }) => ({
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  SOCIAL_PROVIDER_HOSTS: fake.hostsSetting,
})

export interface CreatedConnection {
  readonly id: string
  readonly provider: string
  readonly provider_key: string
  readonly callback_url: string
}

/** POST /v1/connections (and, for generic OIDC, the Owner's confirmation). */
export const createConnection = async (
  app: TestApp,
  b: Bootstrapped,
  body: Record<string, unknown>,
  confirm = true,
): Promise<CreatedConnection> => {
  const res = await app.management("/v1/connections", {
    method: "POST",
    key: b.api_key,
    body: { environment_id: b.environment_id, mode: "byo", ...body },
  })
  expect(res.status, res.text).toBe(201)
  if (body["provider"] === "generic_oidc" && confirm) {
    const patched = await app.management(`/v1/connections/${res.json.id}`, {
      method: "PATCH",
      key: b.api_key,
      body: { owner_confirmed: true },
    })
    expect(patched.status, patched.text).toBe(200)
  }
  return res.json
}

/** An Apple developer key: the PKCS#8 PEM stored in the connection and its public JWK for the fake. */
export const appleKey = async () => {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" })
  return {
    teamId: "TEAMID1234",
    keyId: "KEYID56789",
    privatePem: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
    publicJwk: await exportJWK(publicKey),
  }
}

/** Registers our callback URL as the redirect URI of a client at a fake provider and creates the matching connection. */
export const connectFake = async (
  app: TestApp,
  b: Bootstrapped,
  fake: FakeProviders,
  provider: FakeProvider,
  overrides: Record<string, unknown> = {},
) => {
  const clientId = `${provider}-client-${Math.random().toString(36).slice(2, 8)}`
  if (provider === "apple") {
    const key = await appleKey()
    const connection = await createConnection(app, b, {
      provider,
      provider_key: provider,
      provider_client_id: clientId,
      provider_client_secret: JSON.stringify({ team_id: key.teamId, key_id: key.keyId, private_key: key.privatePem }),
      ...overrides,
    })
    fake.registerClient(provider, {
      clientId,
      redirectUri: connection.callback_url,
      apple: { teamId: key.teamId, keyId: key.keyId, publicJwk: key.publicJwk },
    })
    return connection
  }
  const connection = await createConnection(app, b, {
    provider,
    provider_key: provider,
    provider_client_id: clientId,
    provider_client_secret: "provider-secret",
    ...overrides,
  })
  fake.registerClient(provider, { clientId, clientSecret: "provider-secret", redirectUri: connection.callback_url })
  return connection
}

/** Sends a request to one of our URLs (absolute, any public host) over the loopback socket. */
export const requestUrl = (
  app: TestApp,
  url: string,
  options: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
) => {
  const u = new URL(url)
  return app.request(u.host, `${u.pathname}${u.search}`, options)
}

/** POSTs a form like a browser auto-submitting Apple's form_post page (a cross-site POST navigation). */
export const postForm = (app: TestApp, url: string, form: Record<string, string>) =>
  requestUrl(app, url, {
    method: "POST",
    body: new URLSearchParams(form).toString(),
    headers: { "content-type": "application/x-www-form-urlencoded", origin: "https://appleid.apple.com" },
  })

export const startSocial = async (app: TestApp, b: Bootstrapped, transactionId: string, provider: string) =>
  app.request(b.interaction_domain, `/v1/auth/transactions/${transactionId}/social/${provider}/start`, {
    method: "POST",
  })

/** Start, visit the provider, and deliver its answer to our callback (query or form_post). */
export const socialRoundTrip = async (
  app: TestApp,
  b: Bootstrapped,
  fake: FakeProviders,
  transactionId: string,
  provider: FakeProvider,
): Promise<TestResponse> => {
  const start = await startSocial(app, b, transactionId, provider)
  expect(start.status, start.text).toBe(200)
  const visit = await fake.visit(start.json.authorization_url)
  if (visit.form) return postForm(app, visit.action!, visit.form)
  expect(visit.status).toBe(302)
  return requestUrl(app, visit.location!)
}

/** The completion proof a callback's redirect carries for a custom-UI transaction (src/login/transactions/social-proof.ts). */
export const socialProofOf = (callback: TestResponse) => {
  const proof = new URL(callback.headers["location"] as string).searchParams.get("social_proof")
  expect(proof).toMatch(/^[A-Za-z0-9_-]{43}$/)
  return proof!
}

export const eventsOf = async (app: TestApp, environmentId: string, type: string) =>
  (
    await query<{ envelope: any }>(
      app,
      "select envelope from event_outbox where environment_id = $1 and type = $2 order by seq",
      [environmentId, type],
    )
  ).map((r) => r.envelope)

export const transactionView = async (app: TestApp, b: Bootstrapped, id: string) =>
  (await app.request(b.interaction_domain, `/v1/auth/transactions/${id}`)).json
