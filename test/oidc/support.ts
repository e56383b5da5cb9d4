import { createHash, randomBytes } from "node:crypto"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, type JSONWebKeySet, jwtVerify } from "jose"
import { issueAuthorizationCode, type LoginMethod } from "../../src/oidc/codes/issue.js"
import { Ids } from "../../src/platform/ids.js"
import { Tenancy } from "../../src/tenancy/service.js"
import { Users } from "../../src/users/service.js"
import type { Bootstrapped, TestApp } from "../support/app.js"
import type { TestResponse } from "../support/http.js"

/** Test fixtures of the token side: clients, users and authorization codes, written through the app's own services. */

export interface TestClient {
  readonly id: string
  readonly secret?: string
  readonly redirectUri: string
  readonly postLogoutRedirectUri: string
}

export const createClient = (
  app: TestApp,
  env: Bootstrapped,
  options: {
    readonly type?: "web_bff" | "web_spa" | "react_native"
    readonly method?: "none" | "client_secret_basic" | "client_secret_post"
    readonly redirectUris?: ReadonlyArray<string>
    readonly postLogoutRedirectUris?: ReadonlyArray<string>
    readonly allowedResources?: ReadonlyArray<string>
    readonly allowedOrigins?: ReadonlyArray<string>
    readonly status?: "active" | "disabled"
  } = {},
): Promise<TestClient> =>
  app.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const ids = yield* Ids
      const id = yield* ids.make("cli")
      const type = options.type ?? "web_spa"
      const method = options.method ?? (type === "web_bff" ? "client_secret_basic" : "none")
      const secret = method === "none" ? undefined : randomBytes(32).toString("base64url")
      const redirectUris = options.redirectUris ?? ["http://localhost:5173/callback"]
      const postLogout = options.postLogoutRedirectUris ?? ["http://localhost:5173/signed-out?from=issuer"]
      const now = new Date(app.now())
      yield* sql`insert into clients (id, workspace_id, environment_id, client_type, name, token_endpoint_auth_method, secret_hash,
      redirect_uris, post_logout_redirect_uris, allowed_resources, allowed_origins, status, created_at, updated_at)
    values (${id}, ${env.workspace_id}, ${env.environment_id}, ${type}, ${"Test " + type}, ${method},
      ${secret === undefined ? null : createHash("sha256").update(secret).digest("hex")},
      ${redirectUris as Array<string>}::text[], ${postLogout as Array<string>}::text[],
      ${(options.allowedResources ?? []) as Array<string>}::text[], ${(options.allowedOrigins ?? []) as Array<string>}::text[],
      ${options.status ?? "active"}, ${now}, ${now})`
      return {
        id,
        ...(secret === undefined ? {} : { secret }),
        redirectUri: redirectUris[0]!,
        postLogoutRedirectUri: postLogout[0]!,
      }
    }),
  )

export interface TestUser {
  readonly id: string
  readonly email: string
}

export const createUser = (
  app: TestApp,
  env: Bootstrapped,
  options: { email?: string; name?: string; locale?: string } = {},
) =>
  app.run(
    Effect.gen(function* () {
      const users = yield* Users
      const sql = yield* SqlClient.SqlClient
      const email = options.email ?? `user-${randomBytes(6).toString("hex")}@example.com`
      const row = yield* sql.withTransaction(
        users.create({
          workspaceId: env.workspace_id,
          environmentId: env.environment_id,
          email,
          emailVerified: true,
          name: options.name ?? "Ada Lovelace",
          locale: options.locale ?? "en-GB",
          method: "email_otp",
        }),
      )
      return { id: row!.id, email }
    }),
  ) as Promise<TestUser>

export const newVerifier = () => randomBytes(48).toString("base64url")
export const challengeOf = (verifier: string) => createHash("sha256").update(verifier).digest("base64url")

export interface MintedCode {
  readonly code: string
  readonly verifier: string
  readonly sessionId: string
  readonly nonce: string | null
}

/** A completed login, as the front half hands it over: issueAuthorizationCode in one transaction. */
export const mintCode = (
  app: TestApp,
  env: Bootstrapped,
  client: TestClient,
  user: TestUser,
  options: {
    readonly scopes?: ReadonlyArray<string>
    readonly resources?: ReadonlyArray<string>
    readonly nonce?: string | null
    readonly method?: LoginMethod
    readonly verifier?: string
    readonly redirectUri?: string
    readonly transactionId?: string
  } = {},
): Promise<MintedCode> =>
  app.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const tenancy = yield* Tenancy
      const record = yield* tenancy.environment(env.environment_id)
      const usersRow = yield* sql<{
        security_version: number
      }>`select security_version from users where id = ${user.id}`
      const verifier = options.verifier ?? newVerifier()
      const nonce = options.nonce === undefined ? "n-" + randomBytes(8).toString("hex") : options.nonce
      const ids = yield* Ids
      const transactionId = options.transactionId ?? (yield* ids.make("txn"))
      const issued = yield* sql.withTransaction(
        issueAuthorizationCode({
          workspaceId: record!.workspaceId,
          environmentId: env.environment_id,
          transactionId,
          clientId: client.id,
          userId: user.id,
          securityVersion: usersRow[0]!.security_version,
          redirectUri: options.redirectUri ?? client.redirectUri,
          codeChallenge: challengeOf(verifier),
          scopes: options.scopes ?? ["openid", "profile", "email", "offline_access"],
          resources: options.resources ?? [],
          nonce,
          method: options.method ?? "email_otp",
          authTime: new Date(app.now()),
        }),
      )
      return { code: issued.code, verifier, sessionId: issued.sessionId, nonce }
    }),
  )

export const form = (params: Record<string, string | ReadonlyArray<string> | undefined>) => {
  const search = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined) continue
    for (const x of typeof v === "string" ? [v] : v) search.append(k, x)
  }
  return search.toString()
}

export const basic = (clientId: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString("base64")}`

/** POST a form to an issuer endpoint. */
export const postForm = (
  app: TestApp,
  env: Bootstrapped,
  path: string,
  params: Record<string, string | ReadonlyArray<string> | undefined>,
  headers: Record<string, string> = {},
) =>
  app.issuer(env.environment_id, path, {
    method: "POST",
    body: form(params),
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
  })

/** The client's credentials for the token endpoint: client_id for a public client, Basic for a confidential one. */
export const clientAuth = (client: TestClient): { params: Record<string, string>; headers: Record<string, string> } =>
  client.secret === undefined
    ? { params: { client_id: client.id }, headers: {} }
    : { params: {}, headers: { authorization: basic(client.id, client.secret) } }

export const exchangeCode = (
  app: TestApp,
  env: Bootstrapped,
  client: TestClient,
  minted: MintedCode,
  extra: Record<string, string | ReadonlyArray<string> | undefined> = {},
) => {
  const auth = clientAuth(client)
  return postForm(
    app,
    env,
    "/oauth2/token",
    {
      grant_type: "authorization_code",
      code: minted.code,
      redirect_uri: client.redirectUri,
      code_verifier: minted.verifier,
      ...auth.params,
      ...extra,
    },
    auth.headers,
  )
}

export const refresh = (
  app: TestApp,
  env: Bootstrapped,
  client: TestClient,
  refreshToken: string,
  extra: Record<string, string | ReadonlyArray<string> | undefined> = {},
) => {
  const auth = clientAuth(client)
  return postForm(
    app,
    env,
    "/oauth2/token",
    { grant_type: "refresh_token", refresh_token: refreshToken, ...auth.params, ...extra },
    auth.headers,
  )
}

export const userinfo = (app: TestApp, env: Bootstrapped, accessToken: string) =>
  app.issuer(env.environment_id, "/oauth2/userinfo", { headers: { authorization: `Bearer ${accessToken}` } })

export const jwksOf = async (app: TestApp, env: Bootstrapped) =>
  (await app.issuer(env.environment_id, "/oauth2/jwks")).json as JSONWebKeySet

/** Verifies one of our JWTs independently, with jose and the published JWKS, at the app's (test) time. */
export const verifyJwt = async (app: TestApp, env: Bootstrapped, token: string, typ: "at+jwt" | "JWT") => {
  const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet(await jwksOf(app, env)), {
    algorithms: ["ES256"],
    typ,
    issuer: env.issuer,
    currentDate: new Date(app.now()),
  })
  return { payload, header: protectedHeader }
}

export const claimsOf = (jwt: string) => decodeJwt(jwt) as Record<string, unknown>
export const headerOf = (jwt: string) => decodeProtectedHeader(jwt)

export const expectOAuthError = (res: TestResponse, status: number, error: string) => {
  if (res.status !== status || res.json?.error !== error) {
    throw new Error(`expected ${status} ${error}, got ${res.status} ${res.text}`)
  }
  if (typeof res.json.error_description !== "string") throw new Error("error_description missing")
}

/** Counts rows of a query (state checks: "and nothing changed"). */
export const queryRows = <T = Record<string, unknown>>(
  app: TestApp,
  text: string,
  params: ReadonlyArray<unknown> = [],
) =>
  app.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      return (yield* sql.unsafe(text, params as Array<unknown>)) as unknown as Array<T>
    }),
  )

/** An API key of the Environment's Workspace (optionally pinned to an Environment). */
export const createApiKey = (
  app: TestApp,
  env: Bootstrapped,
  scopes: ReadonlyArray<string>,
  environmentId: string | null = null,
) =>
  app.run(
    Effect.gen(function* () {
      const tenancy = yield* Tenancy
      const sql = yield* SqlClient.SqlClient
      return yield* sql.withTransaction(
        tenancy.createApiKey({
          workspaceId: env.workspace_id,
          environmentId,
          name: "test key",
          scopes,
          expiresAt: null,
        }),
      )
    }),
  )

/** A second Environment in the same Workspace and Project. */
export const createSiblingEnvironment = (app: TestApp, env: Bootstrapped) =>
  app.run(
    Effect.gen(function* () {
      const tenancy = yield* Tenancy
      const sql = yield* SqlClient.SqlClient
      return yield* sql.withTransaction(
        tenancy.createEnvironment({
          workspaceId: env.workspace_id,
          projectId: env.project_id,
          type: "production",
          name: "Prod",
        }),
      )
    }),
  )

/** The headers two answers of one endpoint must agree on (the date, the connection and the request id differ by nature). */
export const stableHeaders = (headers: Record<string, unknown>) => {
  const { date: _d, "x-request-id": _r, connection: _c, "keep-alive": _k, ...rest } = headers
  return rest
}

/** Blocks a user through the Management API (its live state changes as any block's does). */
export const blockUser = async (app: TestApp, env: Bootstrapped, userId: string) => {
  const res = await app.management(`/v1/users/${userId}/block?environment_id=${env.environment_id}`, {
    method: "POST",
    body: {},
  })
  if (res.status !== 200) throw new Error(`block: ${res.status} ${res.text}`)
}

/** Revokes one login session of a user through the Management API. */
export const revokeSession = async (app: TestApp, env: Bootstrapped, userId: string, sessionId: string) => {
  const res = await app.management(`/v1/users/${userId}/sessions/${sessionId}?environment_id=${env.environment_id}`, {
    method: "DELETE",
  })
  if (res.status !== 200) throw new Error(`session revocation: ${res.status} ${res.text}`)
}
