import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { allRoutes } from "../../src/http/routes.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { createClient, createTransaction, type LoginClientInfo, publicApi, transactionBody, uniqueEmail } from "../login/support.js"
import { bodyFor, expectProblem, RUNS, refusedChangesNothing, snapshot } from "./support.js"

let app: TestApp
let b: Bootstrapped
let client: LoginClientInfo

// Limits raised: the properties are about decoding and rules, not about rate limiting.
const LIMITS = {
  RATE_LIMIT_IP_PER_MINUTE: "1000000", RATE_LIMIT_EMAIL_PER_10_MINUTES: "1000000", RATE_LIMIT_CLIENT_PER_MINUTE: "1000000",
  RATE_LIMIT_OTP_VERIFY_PER_EMAIL_PER_MINUTE: "1000000", RATE_LIMIT_OTP_FAILURES_PER_EMAIL_PER_HOUR: "1000000",
}

beforeAll(async () => {
  app = await startApp({ env: LIMITS })
  b = await app.bootstrap()
  client = await createClient(app, b)
})
afterAll(async () => { await app?.close() })

/** A valid body per route, which the generator breaks one field at a time. */
const bases = (): Record<string, Record<string, unknown>> => ({
  "/v1/auth/transactions": transactionBody(client),
  "/v1/auth/transactions/:transactionId/email/start": { email: uniqueEmail("fuzz") },
  "/v1/auth/transactions/:transactionId/email/resend": { challenge_id: "chl_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" },
  "/v1/auth/transactions/:transactionId/email/verify": { challenge_id: "chl_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", code: "123456" },
  "/v1/auth/transactions/:transactionId/passkeys/authentication/options": { email: uniqueEmail("fuzz") },
  "/v1/auth/transactions/:transactionId/passkeys/registration/options": {},
})

const interactionRoutes = () => {
  const config = app.config
  return allRoutes(config).interaction.filter((r) => r.method !== "GET" && r.method !== "OPTIONS" && r.doc?.body !== undefined)
}

it("every JSON body of the Public API (Interaction Domain /v1): the spec's success or error, never a 500; a refusal changes nothing", async () => {
  const routes = interactionRoutes()
  expect(routes.length).toBeGreaterThanOrEqual(10)
  const baseBodies = bases()
  const seen = new Map<string, Set<number>>()
  for (const route of routes) {
    const fields = Object.keys((route.doc!.body as { fields?: Record<string, unknown> }).fields ?? {})
    await fc.assert(fc.asyncProperty(bodyFor(fields, baseBodies[route.path] ?? {}), fc.boolean(), async (body, freshTransaction) => {
      // A live transaction (fresh, or one earlier runs may have moved on) fills :transactionId.
      const txn = freshTransaction ? await createTransaction(app, b, client) : "txn_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
      const path = route.path.replace(":transactionId", txn)
      const before = await snapshot(app)
      const res = await publicApi(app, b, path.replace(/^\/v1/, ""), { method: route.method, body: JSON.stringify(body) })
      const context = `${route.method} ${route.path} ${JSON.stringify(body).slice(0, 300)}`
      seen.set(route.path, (seen.get(route.path) ?? new Set()).add(res.status))
      if (res.status >= 400) expectProblem(res, context)
      else expect(res.status, context).toBeLessThan(300)
      await refusedChangesNothing(app, before, res, context)
    }), { numRuns: RUNS, examples: [[baseBodies[route.path] ?? {}, true]] })
  }
  // The generators reach both sides (the valid base body is always among the examples): every route refused something, creation also succeeded.
  for (const route of routes) expect([...seen.get(route.path)!].some((s) => s >= 400), route.path).toBe(true)
  expect(seen.get("/v1/auth/transactions")!.has(201)).toBe(true)
}, 240_000)

it("the checksum sees a change (the harness itself)", async () => {
  const before = await snapshot(app)
  await createTransaction(app, b, client)
  const after = await snapshot(app)
  expect(Object.keys(before).filter((t) => before[t] !== after[t])).toEqual(["auth_transactions"])
})

it("bodies that are not JSON at all: 400 invalid_request_body (or 413 / 415), nothing changed", async () => {
  const txn = await createTransaction(app, b, client)
  const raw = fc.oneof(fc.string(), fc.constantFrom("{", "[1,", "{\"a\":}", "\u0000", "nul", "{\"email\":\"x\"}garbage"))
  const types = fc.constantFrom("application/json", "text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin1")
  await fc.assert(fc.asyncProperty(raw, types, fc.constantFrom("/auth/transactions", `/auth/transactions/${txn}/email/start`), async (text, type, path) => {
    const before = await snapshot(app)
    const res = await publicApi(app, b, path, { method: "POST", body: text, headers: { "content-type": type } })
    const context = `${path} ${type} ${JSON.stringify(text)}`
    expectProblem(res, context)
    await refusedChangesNothing(app, before, res, context)
  }), { numRuns: RUNS * 2 })
})
