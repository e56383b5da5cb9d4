import { afterAll, beforeAll } from "vitest"
import type { UserRow } from "../../src/users/repo.js"
import { type Bootstrapped, type StartOptions, type TestApp, startApp } from "../support/app.js"
import type { RequestOptions, TestResponse } from "../support/http.js"
import {
  completeAndExchange,
  type FlowClient,
  refreshTokens,
  registerClient,
  startTransaction,
} from "../passkeys/support/flow.js"
import { count, createUser, eventsOf, expectProblem, query, randomId } from "../passkeys/support/helpers.js"

// Shared set-up of the /me tests: one app and database per file, a public web client, users
// created through the shared Users service and tokens from a real code exchange.

export { count, createUser, eventsOf, expectProblem, query, randomId, refreshTokens }

export interface MeContext {
  app: TestApp
  b: Bootstrapped
  client: FlowClient
}

/**
 * Starts the app for this file (closed after it); the returned object is filled in beforeAll.
 * `options` may be computed first (e.g. after an SMTP sink is listening).
 */
export const useMeApp = (options: StartOptions | (() => Promise<StartOptions>) = {}): MeContext => {
  const ctx = {} as MeContext
  beforeAll(async () => {
    ctx.app = await startApp(typeof options === "function" ? await options() : options)
    ctx.b = await ctx.app.bootstrap()
    ctx.client = await registerClient(ctx.app, ctx.b)
  })
  afterAll(async () => {
    await ctx.app?.close()
  })
  return ctx
}

let counter = 0
/** A unique address per call (tests share one database per file). */
export const uniqueEmail = (label: string) => `${label}-${++counter}-${randomId("x").slice(2, 10)}@example.com`

/**
 * Tokens for `user` from a real code exchange; the transaction is marked authenticated as an
 * Email OTP verification leaves it (the login capability's own tests cover that step).
 */
export const signIn = async (ctx: MeContext, user: UserRow, scope = "openid email profile offline_access") => {
  const txn = await startTransaction(ctx.app, ctx.b, ctx.client, { scope })
  await query(
    ctx.app,
    `update auth_transactions set status = 'authenticated', method = 'email_otp', user_id = $2, authenticated_at = $3
    where id = $1`,
    [txn.id, user.id, new Date(ctx.app.now())],
  )
  const { tokens, access } = await completeAndExchange(ctx.app, ctx.b, ctx.client, txn)
  return {
    tokens: tokens as { access_token: string; id_token: string; refresh_token: string },
    sid: access["sid"] as string,
    access,
  }
}

/** A /me call on the Interaction Domain with an optional Bearer token. */
export const me = (
  ctx: MeContext,
  token: string | undefined,
  path: string,
  options: RequestOptions = {},
): Promise<TestResponse> =>
  ctx.app.request(ctx.b.interaction_domain, `/v1/me${path}`, {
    ...options,
    headers: { ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...options.headers },
  })

/** A new user (email verified) with a signed-in session. */
export const signedInUser = async (ctx: MeContext, label: string, fields: { name?: string } = {}) => {
  const user = await createUser(ctx.app, ctx.b, uniqueEmail(label), fields)
  const session = await signIn(ctx, user)
  return { user, ...session, token: session.tokens.access_token }
}

/** Events of one type about one user, oldest first: the full envelopes. */
export const userEvents = async (ctx: MeContext, type: string, userId: string) =>
  (await eventsOf(ctx.app, ctx.b.environment_id, type)).filter((e) => e.payload.userId === userId)

/** UserInfo and introspection (with the bootstrap key, which holds `introspect`) of an access token. */
export const userinfo = (ctx: MeContext, token: string) =>
  ctx.app.issuer(ctx.b.environment_id, "/oauth2/userinfo", { headers: { authorization: `Bearer ${token}` } })
export const introspect = (ctx: MeContext, token: string) =>
  ctx.app.issuer(ctx.b.environment_id, "/oauth2/introspect", {
    method: "POST",
    body: new URLSearchParams({ token }).toString(),
    headers: { "content-type": "application/x-www-form-urlencoded", "x-management-api-key": ctx.b.api_key },
  })

/** A refresh-token grant that may fail (returns the raw answer). */
export const tryRefresh = (ctx: MeContext, refreshToken: string) =>
  ctx.app.issuer(ctx.b.environment_id, "/oauth2/token", {
    method: "POST",
    body: new URLSearchParams({
      grant_type: "refresh_token",
      refresh_token: refreshToken,
      client_id: ctx.client.client_id,
    }).toString(),
    headers: { "content-type": "application/x-www-form-urlencoded" },
  })

/** The issuer social login records for an identity of these providers (src/social/identity-key.ts; Microsoft's is per tenant). */
const ISSUERS: Readonly<Record<string, string>> = {
  google: "https://accounts.google.com",
  apple: "https://appleid.apple.com",
  github: "https://github.com",
  microsoft: "https://login.microsoftonline.com/9188040d-6c67-4c5b-b112-36a304b66dad/v2.0",
}

/**
 * Inserts a linked identity row as social login stores it (sql/0004 and sql/0167 identities);
 * `issuer` defaults to the provider's own (the identity its Connection issues now).
 */
export const insertIdentity = async (
  ctx: MeContext,
  userId: string,
  provider: string,
  at = new Date(ctx.app.now()),
  issuer: string | null = ISSUERS[provider] ?? null,
) => {
  const id = randomId("idn")
  await query(
    ctx.app,
    `insert into identities (id, workspace_id, environment_id, user_id, provider, provider_issuer, provider_subject, email, linked_at)
    values ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [id, ctx.b.workspace_id, ctx.b.environment_id, userId, provider, issuer, randomId("sub"), null, at],
  )
  return id
}

/**
 * Injected failure: `table` is renamed away while `run` runs, so every statement touching it
 * fails with a SqlError as a lost database would (then it comes back).
 */
export const withTableAway = async <T>(ctx: MeContext, table: string, run: () => Promise<T>): Promise<T> => {
  await query(ctx.app, `alter table ${table} rename to ${table}_away`)
  try {
    return await run()
  } finally {
    await query(ctx.app, `alter table ${table}_away rename to ${table}`)
  }
}
