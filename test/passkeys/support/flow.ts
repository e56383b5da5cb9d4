import { createHash, randomBytes } from "node:crypto"
import { decodeJwt } from "jose"
import { expect } from "vitest"
import type { Bootstrapped, TestApp } from "../../support/app.js"
import type { RequestOptions, TestResponse } from "../../support/http.js"

// End-to-end steps of the Public Authentication API, as a custom login UI drives them.

export interface FlowClient {
  readonly client_id: string
  readonly redirect_uri: string
}

export const ALLOWED_ORIGIN = "https://app.example.com"

/** A public web client registered through the Management API. */
export const registerClient = async (
  app: TestApp,
  b: Bootstrapped,
  overrides: Record<string, unknown> = {},
): Promise<FlowClient> => {
  const redirect_uri = "http://127.0.0.1:4999/callback"
  const res = await app.management("/v1/clients", {
    method: "POST",
    key: b.api_key,
    body: {
      environment_id: b.environment_id,
      client_type: "web_spa",
      name: "Passkey SPA",
      token_endpoint_auth_method: "none",
      redirect_uris: [redirect_uri],
      allowed_origins: [ALLOWED_ORIGIN],
      allowed_scopes: ["openid", "profile", "email", "offline_access"],
      ...overrides,
    },
  })
  expect(res.status, res.text).toBe(201)
  return { client_id: res.json.id, redirect_uri }
}

export const publicApi = (
  app: TestApp,
  b: Bootstrapped,
  path: string,
  options?: RequestOptions,
): Promise<TestResponse> => app.request(b.interaction_domain, `/v1${path}`, options)

export interface Transaction {
  readonly id: string
  readonly verifier: string
  readonly nonce: string
}

export const startTransaction = async (
  app: TestApp,
  b: Bootstrapped,
  client: FlowClient,
  extra: { scope?: string; resource?: ReadonlyArray<string> } = {},
): Promise<Transaction> => {
  const verifier = randomBytes(32).toString("base64url")
  const nonce = randomBytes(8).toString("hex")
  const res = await publicApi(app, b, "/auth/transactions", {
    body: {
      client_id: client.client_id,
      redirect_uri: client.redirect_uri,
      code_challenge_method: "S256",
      code_challenge: createHash("sha256").update(verifier).digest("base64url"),
      state: "s-1",
      nonce,
      scope: extra.scope ?? "openid email",
      ...(extra.resource ? { resource: extra.resource } : {}),
    },
  })
  expect(res.status, res.text).toBe(201)
  return { id: res.json.transaction_id, verifier, nonce }
}

export const passkeyCall = (
  app: TestApp,
  b: Bootstrapped,
  txn: string,
  step: "registration/options" | "registration/verify" | "authentication/options" | "authentication/verify",
  body?: unknown,
) =>
  publicApi(app, b, `/auth/transactions/${txn}/passkeys/${step}`, {
    method: "POST",
    ...(body === undefined ? {} : { body }),
  })

export const getTransaction = (app: TestApp, b: Bootstrapped, txn: string) =>
  publicApi(app, b, `/auth/transactions/${txn}`)

/**
 * complete + token exchange; returns the token response and the decoded access and ID tokens. A
 * custom-UI social login passes the `social_proof` its redirect URI received.
 */
export const completeAndExchange = async (
  app: TestApp,
  b: Bootstrapped,
  client: FlowClient,
  txn: Transaction,
  socialProof?: string,
) => {
  const completed = await publicApi(app, b, `/auth/transactions/${txn.id}/complete`, {
    method: "POST",
    ...(socialProof === undefined ? {} : { body: { social_proof: socialProof } }),
  })
  expect(completed.status, completed.text).toBe(200)
  const form = new URLSearchParams({
    grant_type: "authorization_code",
    code: completed.json.authorization_code,
    redirect_uri: client.redirect_uri,
    code_verifier: txn.verifier,
    client_id: client.client_id,
  })
  const token = await app.issuer(b.environment_id, "/oauth2/token", {
    method: "POST",
    body: form.toString(),
    headers: { "content-type": "application/x-www-form-urlencoded" },
  })
  expect(token.status, token.text).toBe(200)
  return {
    tokens: token.json as { access_token: string; id_token: string; refresh_token?: string },
    access: decodeJwt(token.json.access_token),
    id: decodeJwt(token.json.id_token),
  }
}

/** grant_type=refresh_token for a public client. */
export const refreshTokens = async (app: TestApp, b: Bootstrapped, client: FlowClient, refreshToken: string) => {
  const form = new URLSearchParams({
    grant_type: "refresh_token",
    refresh_token: refreshToken,
    client_id: client.client_id,
  })
  const res = await app.issuer(b.environment_id, "/oauth2/token", {
    method: "POST",
    body: form.toString(),
    headers: { "content-type": "application/x-www-form-urlencoded" },
  })
  expect(res.status, res.text).toBe(200)
  return res.json as { access_token: string; refresh_token: string }
}
