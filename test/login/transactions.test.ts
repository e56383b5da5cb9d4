import { Clock, Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { sweepLogin } from "../../src/login/housekeeping.js"
import { markTransactionConsumed } from "../../src/login/transactions/service.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import {
  countRows,
  createClient,
  createTransaction,
  type LoginClientInfo,
  pkce,
  publicApi,
  query,
  RESOURCE,
  transactionBody,
  transactionStatus,
} from "./support.js"

let app: TestApp
let b: Bootstrapped
let client: LoginClientInfo

beforeAll(async () => {
  app = await startApp()
  b = await app.bootstrap()
  client = await createClient(app, b)
})
afterAll(async () => {
  await app?.close()
})

const TXN_ID = /^txn_[a-z2-7]{32}$/

describe("POST /auth/transactions", () => {
  it("creates a transaction in status created with a 10-minute lifetime and the available methods", async () => {
    const before = app.now()
    const res = await publicApi(app, b, "/auth/transactions", { body: transactionBody(client) })
    expect(res.status).toBe(201)
    expect(Object.keys(res.json).sort()).toEqual(["available_methods", "expires_at", "transaction_id"])
    expect(res.json.transaction_id).toMatch(TXN_ID)
    expect(Date.parse(res.json.expires_at)).toBe(before + 600_000)
    expect(res.json.available_methods).toEqual(["passkey", "email_otp"])
    expect(await transactionStatus(app, res.json.transaction_id)).toBe("created")
    expect(res.headers["cache-control"]).toBe("no-store")
  })

  it("is also served at {issuer}/v1 on the canonical issuer host", async () => {
    const res = await app.issuer(b.environment_id, "/v1/auth/transactions", { body: transactionBody(client) })
    expect(res.status).toBe(201)
    expect(res.json.transaction_id).toMatch(TXN_ID)
  })

  it("accepts a 512-character state and nonce, no nonce without openid, resource values of the client, native_return", async () => {
    const long = "s".repeat(512)
    expect(
      (await publicApi(app, b, "/auth/transactions", { body: transactionBody(client, { state: long, nonce: long }) }))
        .status,
    ).toBe(201)
    const noOpenid = transactionBody(client, { scope: "email profile" }) as Record<string, unknown>
    delete noOpenid["nonce"]
    expect((await publicApi(app, b, "/auth/transactions", { body: noOpenid })).status).toBe(201)
    expect(
      (await publicApi(app, b, "/auth/transactions", { body: transactionBody(client, { resource: [RESOURCE] }) }))
        .status,
    ).toBe(201)
    expect(
      (
        await publicApi(app, b, "/auth/transactions", {
          body: transactionBody(client, { response_mode: "native_return" }),
        })
      ).status,
    ).toBe(201)
    const rows = await query<{ scopes: Array<string> }>(
      app,
      "select scopes from auth_transactions where environment_id = $1 and state = $2",
      [b.environment_id, long],
    )
    expect(rows[0]!.scopes).toEqual(["openid", "email"])
  })

  describe("refusals: exact status and code, and no transaction is created", () => {
    const refusals: Array<[string, () => unknown, number, string]> = [
      ["unreadable JSON", () => "{not json", 400, "invalid_request_body"],
      [
        "a missing required field",
        () => {
          const x = transactionBody(client) as Record<string, unknown>
          delete x["state"]
          return x
        },
        400,
        "invalid_request_body",
      ],
      ["an unknown field", () => transactionBody(client, { extra: 1 }), 400, "invalid_request_body"],
      [
        "an unknown client",
        () => transactionBody(client, { client_id: "cli_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" }),
        400,
        "invalid_request",
      ],
      [
        "a redirect URI with a trailing slash",
        () => transactionBody(client, { redirect_uri: `${client.redirect_uri}/` }),
        400,
        "invalid_request",
      ],
      [
        "a redirect URI differing in case",
        () => transactionBody(client, { redirect_uri: client.redirect_uri.replace("callback", "Callback") }),
        400,
        "invalid_request",
      ],
      [
        "a redirect URI with a query added",
        () => transactionBody(client, { redirect_uri: `${client.redirect_uri}?a=1` }),
        400,
        "invalid_request",
      ],
      [
        "code_challenge_method plain",
        () => transactionBody(client, { code_challenge_method: "plain" }),
        400,
        "invalid_request",
      ],
      [
        "code_challenge_method s256 (case)",
        () => transactionBody(client, { code_challenge_method: "s256" }),
        400,
        "invalid_request",
      ],
      [
        "a 42-character code_challenge",
        () => transactionBody(client, { code_challenge: pkce().challenge.slice(1) }),
        400,
        "invalid_request",
      ],
      [
        "a 44-character code_challenge",
        () => transactionBody(client, { code_challenge: `${pkce().challenge}A` }),
        400,
        "invalid_request",
      ],
      [
        "a code_challenge with non-base64url characters",
        () => transactionBody(client, { code_challenge: `${pkce().challenge.slice(1)}=` }),
        400,
        "invalid_request",
      ],
      ["an empty state", () => transactionBody(client, { state: "" }), 400, "invalid_request"],
      ["a 513-character state", () => transactionBody(client, { state: "s".repeat(513) }), 400, "invalid_request"],
      ["an empty nonce", () => transactionBody(client, { nonce: "" }), 400, "invalid_request"],
      ["a 513-character nonce", () => transactionBody(client, { nonce: "n".repeat(513) }), 400, "invalid_request"],
      [
        "openid without a nonce",
        () => {
          const x = transactionBody(client) as Record<string, unknown>
          delete x["nonce"]
          return x
        },
        400,
        "invalid_request",
      ],
      ["an unknown scope token", () => transactionBody(client, { scope: "openid admin" }), 400, "invalid_request"],
      [
        "a scope with a double space",
        () => transactionBody(client, { scope: "openid  email" }),
        400,
        "invalid_request",
      ],
      ["an empty scope", () => transactionBody(client, { scope: "" }), 400, "invalid_request"],
      [
        "a resource not in allowed_resources",
        () => transactionBody(client, { resource: ["https://other.example.com"] }),
        400,
        "invalid_request",
      ],
      [
        "21 resource values",
        () => transactionBody(client, { resource: Array.from({ length: 21 }, (_, i) => `${RESOURCE}/${i}`) }),
        400,
        "invalid_request",
      ],
      [
        "a resource with a fragment",
        () => transactionBody(client, { resource: [`${RESOURCE}#x`] }),
        400,
        "invalid_request",
      ],
      [
        "an unknown response_mode",
        () => transactionBody(client, { response_mode: "form_post" }),
        400,
        "invalid_request",
      ],
    ]
    for (const [name, body, status, code] of refusals) {
      it(`refuses ${name}: ${status} ${code}`, async () => {
        const before = await countRows(app, "auth_transactions")
        const res = await publicApi(app, b, "/auth/transactions", { body: body() })
        expect(res.status, res.text).toBe(status)
        expect(res.json.code).toBe(code)
        expect(res.headers["content-type"]).toContain("application/problem+json")
        expect(await countRows(app, "auth_transactions")).toBe(before)
      })
    }

    it("refuses a scope the client is not allowed (400 invalid_request)", async () => {
      const narrow = await createClient(app, b, { allowed_scopes: ["openid", "email"] })
      const res = await publicApi(app, b, "/auth/transactions", {
        body: transactionBody(narrow, { scope: "openid offline_access" }),
      })
      expect([res.status, res.json.code]).toEqual([400, "invalid_request"])
      expect((await publicApi(app, b, "/auth/transactions", { body: transactionBody(narrow) })).status).toBe(201)
    })

    it("refuses a disabled client and a client of another Environment (400 invalid_request)", async () => {
      const disabled = await createClient(app, b, { status: "disabled" })
      const res = await publicApi(app, b, "/auth/transactions", { body: transactionBody(disabled) })
      expect([res.status, res.json.code]).toEqual([400, "invalid_request"])
      const other = await app.bootstrap()
      const foreign = await createClient(app, other)
      const res2 = await publicApi(app, b, "/auth/transactions", { body: transactionBody(foreign) })
      expect([res2.status, res2.json.code]).toEqual([400, "invalid_request"])
    })
  })
})

describe("GET /auth/transactions/{id}", () => {
  it("returns the status, expiry and available methods", async () => {
    const id = await createTransaction(app, b, client)
    const res = await publicApi(app, b, `/auth/transactions/${id}`)
    expect(res.status).toBe(200)
    expect(res.json).toEqual({
      transaction_id: id,
      status: "created",
      expires_at: expect.any(String),
      available_methods: ["passkey", "email_otp"],
    })
  })

  it("404 auth_transaction_not_found for an unknown id and for another Environment's transaction", async () => {
    const res = await publicApi(app, b, "/auth/transactions/txn_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
    expect([res.status, res.json.code]).toEqual([404, "auth_transaction_not_found"])
    const other = await app.bootstrap()
    const id = await createTransaction(app, b, client)
    const res2 = await publicApi(app, other, `/auth/transactions/${id}`)
    expect([res2.status, res2.json.code]).toEqual([404, "auth_transaction_not_found"])
  })
})

describe("10-minute lifetime", () => {
  it("answers until 10 minutes, then expires: 410 auth_transaction_expired on any use", async () => {
    const id = await createTransaction(app, b, client)
    await app.advance("599 seconds")
    expect((await publicApi(app, b, `/auth/transactions/${id}`)).json.status).toBe("created")
    await app.advance("1 second")
    for (const [path, method] of [
      ["", "GET"],
      ["/cancel", "POST"],
      ["/complete", "POST"],
    ] as const) {
      const res = await publicApi(app, b, `/auth/transactions/${id}${path}`, { method })
      expect([res.status, res.json.code], path).toEqual([410, "auth_transaction_expired"])
    }
    const start = await publicApi(app, b, `/auth/transactions/${id}/email/start`, {
      body: { email: "late@example.com" },
    })
    expect([start.status, start.json.code]).toEqual([410, "auth_transaction_expired"])
    expect(await transactionStatus(app, id)).toBe("expired")
    expect(await countRows(app, "email_challenges", "transaction_id = $1", [id])).toBe(0)
  })
})

describe("cancel", () => {
  it("moves an active transaction to failed; it cannot be resumed", async () => {
    const id = await createTransaction(app, b, client)
    const res = await publicApi(app, b, `/auth/transactions/${id}/cancel`, { method: "POST" })
    expect(res.status).toBe(200)
    expect(res.json.status).toBe("failed")
    expect((await publicApi(app, b, `/auth/transactions/${id}`)).json.status).toBe("failed")
    const again = await publicApi(app, b, `/auth/transactions/${id}/cancel`, { method: "POST" })
    expect([again.status, again.json.code]).toEqual([409, "invalid_transaction_state"])
    const start = await publicApi(app, b, `/auth/transactions/${id}/email/start`, { body: { email: "x@example.com" } })
    expect([start.status, start.json.code]).toEqual([409, "invalid_transaction_state"])
    const complete = await publicApi(app, b, `/auth/transactions/${id}/complete`, { method: "POST" })
    expect([complete.status, complete.json.code]).toEqual([409, "transaction_not_authenticated"])
    expect(await transactionStatus(app, id)).toBe("failed")
  })

  it("one winner when cancels race", async () => {
    const id = await createTransaction(app, b, client)
    const results = await Promise.all(
      Array.from({ length: 5 }, () => publicApi(app, b, `/auth/transactions/${id}/cancel`, { method: "POST" })),
    )
    expect(results.filter((r) => r.status === 200)).toHaveLength(1)
    expect(results.filter((r) => r.status === 409 && r.json.code === "invalid_transaction_state")).toHaveLength(4)
  })
})

describe("complete before authentication", () => {
  it("409 transaction_not_authenticated, nothing issued", async () => {
    const id = await createTransaction(app, b, client)
    const res = await publicApi(app, b, `/auth/transactions/${id}/complete`, { method: "POST" })
    expect([res.status, res.json.code]).toEqual([409, "transaction_not_authenticated"])
    expect(await transactionStatus(app, id)).toBe("created")
    expect(await countRows(app, "authorization_codes", "transaction_id = $1", [id])).toBe(0)
  })
})

describe("markTransactionConsumed (for the token endpoint)", () => {
  it("moves only a code_issued transaction", async () => {
    const id = await createTransaction(app, b, client)
    expect(await app.run(markTransactionConsumed(b.environment_id, id))).toBe(false)
    await query(app, "update auth_transactions set status = 'code_issued' where id = $1", [id])
    expect(await app.run(markTransactionConsumed(b.environment_id, id))).toBe(true)
    expect(await transactionStatus(app, id)).toBe("consumed")
    expect(await app.run(markTransactionConsumed(b.environment_id, id))).toBe(false)
    expect(await app.run(markTransactionConsumed("env_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", id))).toBe(false)
  })
})

describe("housekeeping", () => {
  it("expires active transactions past 10 minutes and deletes them (with their challenges) a day later", async () => {
    const id = await createTransaction(app, b, client)
    const start = await publicApi(app, b, `/auth/transactions/${id}/email/start`, {
      body: { email: "sweep@example.com" },
    })
    expect(start.status).toBe(202)
    await app.advance("10 minutes")
    const first = await app.run(Effect.flatMap(Clock.currentTimeMillis, (now) => sweepLogin(new Date(now))))
    expect(first.expired).toBeGreaterThanOrEqual(1)
    expect(await transactionStatus(app, id)).toBe("expired")
    // Ended windows are gone (the per-minute and 10-minute ones by now); the hourly mail ceiling may still run.
    expect(
      await countRows(app, "rate_limit_counters", "environment_id = $1 and window_end <= $2", [
        b.environment_id,
        new Date(app.now()),
      ]),
    ).toBe(0)
    expect(
      await countRows(app, "rate_limit_counters", "environment_id = $1 and bucket <> 'otp_send:email'", [
        b.environment_id,
      ]),
    ).toBe(0)
    await app.advance("1 day")
    await app.advance("1 second")
    await app.run(Effect.flatMap(Clock.currentTimeMillis, (now) => sweepLogin(new Date(now))))
    expect(await countRows(app, "auth_transactions", "id = $1", [id])).toBe(0)
    expect(await countRows(app, "email_challenges", "transaction_id = $1", [id])).toBe(0)
  })
})
