import { createHash, randomBytes } from "node:crypto"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { SMTPServer } from "smtp-server"
import { expect } from "vitest"
import type { Bootstrapped, TestApp } from "../support/app.js"
import type { RequestOptions, TestResponse } from "../support/http.js"

export const ALLOWED_ORIGIN = "https://app.example.com"
export const RESOURCE = "https://api.example.com"

/** PKCE pair (RFC 7636): a 43-character verifier and its S256 challenge. */
export const pkce = () => {
  const verifier = randomBytes(32).toString("base64url")
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") }
}

export interface LoginClientInfo {
  readonly client_id: string
  readonly redirect_uri: string
}

/** Registers a public web client through the Management API (POST /v1/clients). */
export const createClient = async (
  app: TestApp,
  b: Bootstrapped,
  overrides: Record<string, unknown> = {},
): Promise<LoginClientInfo> => {
  const redirect_uri =
    (overrides["redirect_uris"] as Array<string> | undefined)?.[0] ?? "http://127.0.0.1:4999/callback"
  const res = await app.management("/v1/clients", {
    method: "POST",
    key: b.api_key,
    body: {
      environment_id: b.environment_id,
      client_type: "web_spa",
      name: "Test SPA",
      token_endpoint_auth_method: "none",
      redirect_uris: [redirect_uri],
      allowed_origins: [ALLOWED_ORIGIN],
      allowed_resources: [RESOURCE],
      allowed_scopes: ["openid", "profile", "email", "offline_access"],
      ...overrides,
    },
  })
  expect(res.status, res.text).toBe(201)
  return { client_id: res.json.id, redirect_uri }
}

/** A Public API call on the Environment's Interaction Domain (`/v1` + path). */
export const publicApi = (
  app: TestApp,
  b: Bootstrapped,
  path: string,
  options?: RequestOptions,
): Promise<TestResponse> => app.request(b.interaction_domain, `/v1${path}`, options)

export const transactionBody = (client: LoginClientInfo, overrides: Record<string, unknown> = {}) => ({
  client_id: client.client_id,
  redirect_uri: client.redirect_uri,
  code_challenge: pkce().challenge,
  code_challenge_method: "S256",
  state: "state-123",
  nonce: "nonce-123",
  scope: "openid email",
  ...overrides,
})

export const createTransaction = async (
  app: TestApp,
  b: Bootstrapped,
  client: LoginClientInfo,
  overrides: Record<string, unknown> = {},
) => {
  const res = await publicApi(app, b, "/auth/transactions", { body: transactionBody(client, overrides) })
  expect(res.status, res.text).toBe(201)
  return res.json.transaction_id as string
}

/** Runs a query through the app's SQL client. */
export const query = <T = Record<string, unknown>>(app: TestApp, text: string, params: ReadonlyArray<unknown> = []) =>
  app.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      return (yield* sql.unsafe(text, params as Array<unknown>)) as unknown as ReadonlyArray<T>
    }),
  )

export const transactionStatus = async (app: TestApp, id: string) =>
  (await query<{ status: string }>(app, "select status from auth_transactions where id = $1", [id]))[0]?.status

export const countRows = async (app: TestApp, table: string, where = "true", params: ReadonlyArray<unknown> = []) =>
  Number((await query<{ n: string }>(app, `select count(*)::text as n from ${table} where ${where}`, params))[0]!.n)

export interface ReceivedMail {
  readonly to: ReadonlyArray<string>
  readonly raw: string
  /** The server's answer to DATA after "250 ", when the sink was given one. */
  readonly reply?: string | undefined
}

/**
 * Waits (real time: the worker polls) until no login-code job is left, so every mail of an
 * earlier start has reached the SMTP sink or was skipped (superseded, suppressed or withheld).
 */
export const loginMailsSettled = async (app: TestApp) => {
  for (let i = 0; i < 300; i++) {
    const [row] = await query<{ n: number }>(
      app,
      `select count(*)::int as n from graphile_worker._private_jobs j
      join graphile_worker._private_tasks t on t.id = j.task_id where t.identifier = 'send_login_code'`,
    )
    if (row!.n === 0) return
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error("login-code jobs did not finish within 15 s")
}

/**
 * A real SMTP server on loopback that keeps every message. `reply` makes its final answer
 * to DATA (after "250 "), e.g. Amazon SES's `Ok <message id>`; kept with the message.
 */
export const startSmtpSink = async (options: { reply?: () => string } = {}) => {
  const messages: Array<ReceivedMail> = []
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Array<Buffer> = []
      stream.on("data", (c: Buffer) => chunks.push(c))
      stream.on("end", () => {
        const reply = options.reply?.()
        messages.push({
          to: (session.envelope.rcptTo || []).map((r) => r.address),
          raw: Buffer.concat(chunks).toString("utf8"),
          reply,
        })
        if (reply === undefined) callback()
        else callback(null, reply)
      })
    },
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  const port = (server.server.address() as AddressInfo).port
  /** Waits (real time: the worker polls) for the n-th message to `to` and returns its code. */
  const waitForCode = async (to: string, nth = 1, timeoutMs = 15_000): Promise<string> => {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const mine = messages.filter((m) => m.to.includes(to))
      if (mine.length >= nth) {
        const m = /sign-in code is (\d{6})/.exec(mine[nth - 1]!.raw)
        if (!m) throw new Error(`no code in the message to ${to}`)
        return m[1]!
      }
      if (Date.now() > deadline) throw new Error(`no message #${nth} to ${to} within ${timeoutMs} ms`)
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    waitForCode,
    messagesTo: (to: string) => messages.filter((m) => m.to.includes(to)),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

export type SmtpSink = Awaited<ReturnType<typeof startSmtpSink>>

let emailCounter = 0
export const uniqueEmail = (label = "user") =>
  `${label}.${process.pid}.${++emailCounter}.${randomBytes(3).toString("hex")}@example.com`

/**
 * The Email OTP calls of one test file's app, Environment, client and SMTP sink (read when called,
 * so a file may assign them in its `beforeAll`).
 */
export const emailOtpCalls = (of: () => { app: TestApp; b: Bootstrapped; client: LoginClientInfo; smtp: SmtpSink }) => {
  const start = (txn: string, email: string) =>
    publicApi(of().app, of().b, `/auth/transactions/${txn}/email/start`, { body: { email } })
  const resend = (txn: string, challenge_id: string) =>
    publicApi(of().app, of().b, `/auth/transactions/${txn}/email/resend`, { body: { challenge_id } })
  const verify = (txn: string, challenge_id: string, code: string) =>
    publicApi(of().app, of().b, `/auth/transactions/${txn}/email/verify`, { body: { challenge_id, code } })
  /** A transaction with a code sent to `email`; returns the ids and the code read from the SMTP sink. */
  const started = async (email = uniqueEmail()) => {
    const { app, b, client, smtp } = of()
    const txn = await createTransaction(app, b, client)
    // Counted before the start: the worker may deliver the mail before the start's answer is read.
    const earlier = smtp.messagesTo(email).length
    const res = await start(txn, email)
    expect(res.status, res.text).toBe(202)
    const code = await smtp.waitForCode(email, earlier + 1)
    return { txn, email, challenge: res.json.challenge_id as string, code }
  }
  /** Domain events of the Environment since a time, oldest first. */
  const events = (type: string, sinceMs = 0) =>
    query<{ envelope: { payload: Record<string, unknown> } }>(
      of().app,
      "select envelope from event_outbox where environment_id = $1 and type = $2 and occurred_at >= $3 order by occurred_at, id",
      [of().b.environment_id, type, new Date(sinceMs)],
    )
  return { start, resend, verify, started, events }
}

/** A 6-digit code that is not `code`. */
export const wrongCodeFor = (code: string) => (code === "000000" ? "111111" : "000000")
