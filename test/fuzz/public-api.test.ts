import fc from "fast-check"
import { afterAll, beforeAll, expect, it } from "vitest"
import { allRoutes } from "../../src/routes.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import {
  createClient,
  createTransaction,
  type LoginClientInfo,
  publicApi,
  query,
  transactionBody,
  uniqueEmail,
} from "../login/support.js"
import { createUser, signIn } from "../me/support.js"
import { type FakeProviders, startFakeProviders } from "../social/fake-providers.js"
import { connectFake, socialEnv, startSocial } from "../social/support.js"
import { bodyFor, expectProblem, nastyString, pathSegment, RUNS, refusedChangesNothing, snapshot } from "./support.js"

let app: TestApp
let b: Bootstrapped
let client: LoginClientInfo
let fake: FakeProviders
/** A signed-in user's access token: /me answers more than 401 only to a real one. */
let accessToken: string

// Limits raised: the properties are about decoding and rules, not about rate limiting.
const LIMITS = {
  RATE_LIMIT_IP_PER_MINUTE: "1000000",
  RATE_LIMIT_EMAIL_PER_10_MINUTES: "1000000",
  RATE_LIMIT_CLIENT_PER_MINUTE: "1000000",
  RATE_LIMIT_OTP_VERIFY_PER_EMAIL_PER_MINUTE: "1000000",
  RATE_LIMIT_OTP_FAILURES_PER_EMAIL_PER_HOUR: "1000000",
  RATE_LIMIT_SOCIAL_START_PER_MINUTE: "1000000",
  RATE_LIMIT_SOCIAL_START_CEILING_PER_MINUTE: "1000000",
  RATE_LIMIT_PASSKEY_OPTIONS_PER_MINUTE: "1000000",
  RATE_LIMIT_PASSKEY_OPTIONS_CEILING_PER_MINUTE: "1000000",
  RATE_LIMIT_ME_WRITES_PER_MINUTE: "1000000",
  RATE_LIMIT_ME_WRITES_CEILING_PER_MINUTE: "1000000",
  RATE_LIMIT_TOKEN_PER_MINUTE: "1000000",
  RATE_LIMIT_TOKEN_CEILING_PER_MINUTE: "1000000",
  RATE_LIMIT_MANAGEMENT_PER_MINUTE: "1000000",
}

beforeAll(async () => {
  fake = await startFakeProviders()
  app = await startApp({ env: { ...LIMITS, ...socialEnv(fake) } })
  b = await app.bootstrap()
  client = await createClient(app, b)
  // A configured provider, so `:provider` is filled with a name that reaches the rules behind it.
  await connectFake(app, b, fake, "github")
  const user = await createUser(app, b, uniqueEmail("fuzz-me"))
  accessToken = (await signIn({ app, b, client }, user)).tokens.access_token
})
afterAll(async () => {
  await app?.close()
  await fake?.close()
})

/** Replaced, in a body, by the state of a social login just started on a fresh transaction. */
const FRESH_STATE = "<fresh social state>"

const freshState = async () => {
  const start = await startSocial(app, b, await createTransaction(app, b, client), "github")
  expect(start.status, start.text).toBe(200)
  return new URL(start.json.authorization_url).searchParams.get("state")!
}

/** A valid body per route, which the generator breaks one field at a time. */
const bases = (): Record<string, Record<string, unknown>> => ({
  "/v1/auth/transactions": transactionBody(client),
  "/v1/auth/transactions/:transactionId/email/start": { email: uniqueEmail("fuzz") },
  "/v1/auth/transactions/:transactionId/email/resend": { challenge_id: "chl_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" },
  "/v1/auth/transactions/:transactionId/email/verify": {
    challenge_id: "chl_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    code: "123456",
  },
  "/v1/auth/transactions/:transactionId/passkeys/authentication/options": { email: uniqueEmail("fuzz") },
  "/v1/auth/transactions/:transactionId/passkeys/registration/options": {},
  "/v1/auth/social/:provider/callback": { state: FRESH_STATE, error: "access_denied" },
  "/v1/me": { name: "Fuzz Name" },
  "/v1/me/email/change/start": { new_email: uniqueEmail("fuzz-new") },
  "/v1/me/email/change/verify-old": { challenge_id: "chl_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", code: "123456" },
  "/v1/me/email/change/verify-new": { challenge_id: "chl_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", code: "123456" },
  "/v1/me/passkeys/registration/options": {},
  "/v1/me/identities/:provider/link": { redirect_uri: client.redirect_uri },
})

/**
 * Routes whose success the valid base body reaches; the others need a secret the fuzzer cannot
 * have (an OTP code from the mail, a WebAuthn assertion): only their refusals
 * are fuzzed.
 */
const MUST_SUCCEED = [
  "/v1/auth/transactions",
  "/v1/auth/transactions/:transactionId/email/start",
  "/v1/auth/transactions/:transactionId/passkeys/authentication/options",
  "/v1/auth/social/:provider/callback",
  "/v1/me",
  "/v1/me/email/change/start",
  "/v1/me/passkeys/registration/options",
  "/v1/me/identities/:provider/link",
]

const interactionRoutes = () =>
  allRoutes(app.config).interaction.filter(
    (r) => r.method !== "GET" && r.method !== "OPTIONS" && r.doc?.body !== undefined,
  )

/** `:provider`: a configured provider, a known but unconfigured one, or anything at all. */
const provider = fc.oneof(
  { weight: 3, arbitrary: fc.constant("github") },
  fc.constantFrom("google", "apple", "generic_oidc", "GITHUB"),
  nastyString,
)

/** Bearer credentials on /me: mostly the real token; sometimes none or a forged one. */
const bearer = fc.oneof(
  { weight: 4, arbitrary: fc.constant<string | undefined>("valid") },
  fc.constantFrom<string | undefined>(undefined, "Bearer eyJhbGciOiJub25lIn0.e30.", "Basic x"),
)

it("every JSON body of the Public API and /me (Interaction Domain /v1), route parameters filled: the spec's success or error, never a 500; a refusal changes nothing", async () => {
  const routes = interactionRoutes()
  expect(routes.length).toBeGreaterThanOrEqual(16)
  const baseBodies = bases()
  const seen = new Map<string, Set<number>>()
  for (const route of routes) {
    const fields = Object.keys((route.doc!.body as { fields?: Record<string, unknown> }).fields ?? {})
    const base = baseBodies[route.path] ?? {}
    await fc.assert(
      fc.asyncProperty(
        bodyFor(fields, base),
        fc.boolean(),
        provider,
        bearer,
        async (body, freshTransaction, providerName, auth) => {
          // A live transaction (fresh, or one earlier runs may have moved on) fills :transactionId.
          const txn =
            route.path.includes(":transactionId") && freshTransaction
              ? await createTransaction(app, b, client)
              : "txn_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
          const path = route.path.replace(":transactionId", txn).replace(":provider", pathSegment(providerName))
          if (typeof body === "object" && body !== null && (body as Record<string, unknown>)["state"] === FRESH_STATE) {
            body = { ...body, state: await freshState() }
          }
          const authorization = auth === "valid" ? `Bearer ${accessToken}` : auth
          const headers = route.path.startsWith("/v1/me") && authorization !== undefined ? { authorization } : {}
          const before = await snapshot(app)
          const res = await publicApi(app, b, path.replace(/^\/v1/, ""), {
            method: route.method,
            body: JSON.stringify(body),
            headers,
          })
          const context = `${route.method} ${path} ${JSON.stringify(body).slice(0, 300)} ${auth ?? "no credentials"}`
          seen.set(route.path, (seen.get(route.path) ?? new Set()).add(res.status))
          if (res.status >= 400) expectProblem(res, context)
          else expect(res.status, context).toBeLessThan(400)
          await refusedChangesNothing(app, before, res, context)
        },
      ),
      { numRuns: RUNS, examples: [[base, true, "github", "valid"]] },
    )
  }
  // The generators reach both sides: every route refused something, and each route whose
  // success a valid body reaches did succeed (a broken example would only ever be refused).
  for (const route of routes)
    expect(
      [...seen.get(route.path)!].some((s) => s >= 400),
      route.path,
    ).toBe(true)
  // (A success may be a redirect: the social callback answers 302 to the client.)
  const succeeded = routes.filter((r) => [...seen.get(r.path)!].some((s) => s < 400)).map((r) => r.path)
  expect(succeeded).toEqual(expect.arrayContaining(MUST_SUCCEED))
  // /me answers more than "no credentials".
  for (const path of routes.map((r) => r.path).filter((p) => p.startsWith("/v1/me"))) {
    expect(
      [...seen.get(path)!].some((s) => s !== 401),
      path,
    ).toBe(true)
  }
}, 240_000)

it("the checksum sees a change (the harness itself)", async () => {
  const before = await snapshot(app)
  await createTransaction(app, b, client)
  const after = await snapshot(app)
  // The transaction and its audit record (audit_events is compared too, but for failure records).
  expect(
    Object.keys(before)
      .filter((t) => before[t] !== after[t])
      .sort(),
  ).toEqual(["public.audit_events", "public.auth_transactions"])
})

it("the checksum ignores only the bookkeeping a refusal may commit, and sees every other change, graphile-worker's jobs included", async () => {
  const txn = await createTransaction(app, b, client)
  const started = await publicApi(app, b, `/auth/transactions/${txn}/email/start`, {
    body: { email: uniqueEmail("harness") },
  })
  expect(started.status, started.text).toBe(202)
  const challenge = started.json.challenge_id as string
  const changed = async (statement: string, params: ReadonlyArray<unknown> = []) => {
    const before = await snapshot(app)
    await query(app, statement, params)
    const after = await snapshot(app)
    return Object.keys(before).filter((t) => before[t] !== after[t])
  }
  const event = (type: string) => [`evt_harness_${type}_${Date.now()}`, b.workspace_id, b.environment_id, type]
  // Bookkeeping: an OTP attempt counted, the 5th killing the challenge; a consumed WebAuthn challenge; a login.failed event; a failure audit record.
  expect(
    await changed("update email_challenges set failed_attempts = failed_attempts + 1 where id = $1", [challenge]),
  ).toEqual([])
  expect(
    await changed("update email_challenges set status = 'invalidated', finished_at = now() where id = $1", [challenge]),
  ).toEqual([])
  expect(
    await changed(
      "insert into event_outbox (id, workspace_id, environment_id, type, envelope, occurred_at) values ($1, $2, $3, $4, '{}', now())",
      event("login.failed"),
    ),
  ).toEqual([])
  expect(
    await changed(
      `insert into audit_events (id, workspace_id, environment_id, actor_type, action, result, created_at)
    values ($1, $2, $3, 'system', 'login.failed', 'failure', now())`,
      [`aud_harness_${Date.now()}`, b.workspace_id, b.environment_id],
    ),
  ).toEqual([])
  // Anything else in those same tables, and in graphile-worker's, is a change.
  expect(await changed("update email_challenges set status = 'verified' where id = $1", [challenge])).toEqual([
    "public.email_challenges",
  ])
  expect(
    await changed(
      "insert into event_outbox (id, workspace_id, environment_id, type, envelope, occurred_at) values ($1, $2, $3, $4, '{}', now())",
      event("user.created"),
    ),
  ).toEqual(["public.event_outbox"])
  expect(await changed("select (graphile_worker.add_job('harness_probe', '{}'::json)).id::text as id")).toEqual(
    expect.arrayContaining(["graphile_worker._private_jobs"]),
  )
})

it("bodies that are not JSON at all: 400 invalid_request_body (or 413 / 415), nothing changed", async () => {
  const txn = await createTransaction(app, b, client)
  const raw = fc.oneof(fc.string(), fc.constantFrom("{", "[1,", '{"a":}', "\u0000", "nul", '{"email":"x"}garbage'))
  const types = fc.constantFrom(
    "application/json",
    "text/plain",
    "application/x-www-form-urlencoded",
    "application/json; charset=latin1",
  )
  await fc.assert(
    fc.asyncProperty(
      raw,
      types,
      fc.constantFrom("/auth/transactions", `/auth/transactions/${txn}/email/start`, "/me"),
      async (text, type, path) => {
        const before = await snapshot(app)
        const res = await publicApi(app, b, path, {
          method: path === "/me" ? "PATCH" : "POST",
          body: text,
          headers: { "content-type": type, ...(path === "/me" ? { authorization: `Bearer ${accessToken}` } : {}) },
        })
        const context = `${path} ${type} ${JSON.stringify(text)}`
        expectProblem(res, context)
        await refusedChangesNothing(app, before, res, context)
      },
    ),
    { numRuns: RUNS * 2 },
  )
})
