import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { createClient, createTransaction, publicApi, uniqueEmail } from "./support.js"

// The test client on 127.0.0.1 plays the nearest proxy; X-Forwarded-For carries the rest of the chain.
const LIMIT = 3

const startOtp = (app: TestApp, b: Bootstrapped, txn: string, forwardedFor: string) =>
  publicApi(app, b, `/auth/transactions/${txn}/email/start`, {
    body: { email: uniqueEmail() },
    headers: { "x-forwarded-for": forwardedFor },
  })

/** Sends LIMIT + 1 OTP mails from one real client, each with another forged leftmost entry. */
const exhaust = async (app: TestApp, b: Bootstrapped, txn: string, chainAfterForged: string) => {
  for (let i = 0; i < LIMIT; i++)
    expect((await startOtp(app, b, txn, `6.6.6.${i}, ${chainAfterForged}`)).status).toBe(202)
  return startOtp(app, b, txn, `6.6.6.${LIMIT}, ${chainAfterForged}`)
}

describe("TRUST_PROXY=2 (two proxies in front)", () => {
  let app: TestApp
  beforeAll(async () => {
    app = await startApp({ env: { TRUST_PROXY: "2", RATE_LIMIT_IP_PER_MINUTE: String(LIMIT) } })
  })
  afterAll(async () => {
    await app?.close()
  })

  it("the per-IP limit counts the address the farther proxy appended; a forged leftmost entry changes nothing", async () => {
    const b = await app.bootstrap()
    const client = await createClient(app, b)
    const txn = await createTransaction(app, b, client)
    const refused = await exhaust(app, b, txn, "198.51.100.7, 10.0.0.9")
    expect([refused.status, refused.json.code]).toEqual([429, "rate_limited"])
    // another client behind the same proxies has its own budget
    expect((await startOtp(app, b, txn, "198.51.100.8, 10.0.0.9")).status).toBe(202)
  })
})

describe("TRUST_PROXY as a list of proxy CIDRs", () => {
  let app: TestApp
  beforeAll(async () => {
    app = await startApp({ env: { TRUST_PROXY: "127.0.0.0/8,10.0.0.0/8", RATE_LIMIT_IP_PER_MINUTE: String(LIMIT) } })
  })
  afterAll(async () => {
    await app?.close()
  })

  it("walks from the right past listed proxies: the first other address is the client", async () => {
    const b = await app.bootstrap()
    const client = await createClient(app, b)
    const txn = await createTransaction(app, b, client)
    const refused = await exhaust(app, b, txn, "198.51.100.7, 10.1.1.1, 10.2.2.2")
    expect([refused.status, refused.json.code]).toEqual([429, "rate_limited"])
    expect((await startOtp(app, b, txn, "198.51.100.8, 10.1.1.1")).status).toBe(202)
  })
})
