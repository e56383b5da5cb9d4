import { createHash, randomBytes } from "node:crypto"
import { expect } from "vitest"
import type { Bootstrapped } from "../support/app.js"
import type { RequestOptions, TestResponse } from "../support/http.js"

/** An HTTP call with an explicit Host (a TestApp's `request`, or `send` bound to a child process's port). */
export type Call = (host: string, path: string, options?: RequestOptions) => Promise<TestResponse>

export interface ConfidentialClient {
  readonly id: string
  readonly secret: string
  readonly redirectUri: string
}

/** A web_bff client registered over the Management API (its secret is returned once). */
export const registerClient = async (
  call: Call,
  managementHost: string,
  b: Bootstrapped,
): Promise<ConfidentialClient> => {
  const redirectUri = "https://app.example.com/callback"
  const res = await call(managementHost, "/v1/clients", {
    method: "POST",
    headers: { authorization: `Bearer ${b.api_key}` },
    body: {
      environment_id: b.environment_id,
      client_type: "web_bff",
      name: "Ops test",
      token_endpoint_auth_method: "client_secret_basic",
      redirect_uris: [redirectUri],
    },
  })
  expect(res.status, res.text).toBe(201)
  return { id: res.json.id, secret: res.json.client_secret, redirectUri }
}

const basic = (client: ConfidentialClient) =>
  `Basic ${Buffer.from(`${encodeURIComponent(client.id)}:${encodeURIComponent(client.secret)}`).toString("base64")}`

export const tokenRequest = (
  call: Call,
  issuerHost: string,
  b: Bootstrapped,
  client: ConfidentialClient,
  params: Record<string, string>,
) =>
  call(issuerHost, `/e/${b.environment_id}/oauth2/token`, {
    method: "POST",
    body: new URLSearchParams(params).toString(),
    headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic(client) },
  })

export interface LoggedIn {
  readonly transactionId: string
  readonly email: string
  readonly otp: string
  readonly wrongOtp: string
  readonly authorizationCode: string
  readonly verifier: string
  readonly tokens: { access_token: string; id_token: string; refresh_token: string }
}

/**
 * One Email OTP login as an application does it, over HTTP only: a login transaction with
 * PKCE, the code from the mail, one wrong code first (a failed attempt), verify, complete,
 * then the authorization code exchanged at the token endpoint with the client's secret.
 */
export const emailOtpLogin = async (
  call: Call,
  hosts: { interaction: string; issuer: string },
  b: Bootstrapped,
  client: ConfidentialClient,
  email: string,
  readCode: (email: string) => Promise<string>,
): Promise<LoggedIn> => {
  const verifier = randomBytes(32).toString("base64url")
  const created = await call(hosts.interaction, "/v1/auth/transactions", {
    body: {
      client_id: client.id,
      redirect_uri: client.redirectUri,
      code_challenge: createHash("sha256").update(verifier).digest("base64url"),
      code_challenge_method: "S256",
      state: "st-1",
      nonce: "nonce-1",
      scope: "openid email offline_access",
    },
  })
  expect(created.status, created.text).toBe(201)
  const txn: string = created.json.transaction_id
  const started = await call(hosts.interaction, `/v1/auth/transactions/${txn}/email/start`, { body: { email } })
  expect(started.status, started.text).toBe(202)
  const otp = await readCode(email)
  const wrongOtp = otp === "000000" ? "111111" : "000000"
  const wrong = await call(hosts.interaction, `/v1/auth/transactions/${txn}/email/verify`, {
    body: { challenge_id: started.json.challenge_id, code: wrongOtp },
  })
  expect(wrong.status, wrong.text).toBe(400)
  const verified = await call(hosts.interaction, `/v1/auth/transactions/${txn}/email/verify`, {
    body: { challenge_id: started.json.challenge_id, code: otp },
  })
  expect(verified.status, verified.text).toBe(200)
  const completed = await call(hosts.interaction, `/v1/auth/transactions/${txn}/complete`, { method: "POST" })
  expect(completed.status, completed.text).toBe(200)
  const authorizationCode: string = completed.json.authorization_code
  const token = await tokenRequest(call, hosts.issuer, b, client, {
    grant_type: "authorization_code",
    code: authorizationCode,
    redirect_uri: client.redirectUri,
    code_verifier: verifier,
  })
  expect(token.status, token.text).toBe(200)
  return { transactionId: txn, email, otp, wrongOtp, authorizationCode, verifier, tokens: token.json }
}

/** The value of one sample in Prometheus text exposition, matched by name and a subset of its labels. */
export const sample = (exposition: string, name: string, labels: Record<string, string> = {}): number | undefined => {
  for (const line of exposition.split("\n")) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (!m || m[1] !== name) continue
    const present = Object.fromEntries(
      [...(m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]),
    )
    if (Object.entries(labels).every(([k, v]) => present[k] === v)) return Number(m[3])
  }
  return undefined
}
