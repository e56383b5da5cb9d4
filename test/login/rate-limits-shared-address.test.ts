import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type TestApp, startApp } from "../support/app.js"
import { createClient, publicApi, type SmtpSink, startSmtpSink, transactionBody, uniqueEmail } from "./support.js"

// The unexplained 429s of a black-box run: many logins of unique emails from many addresses,
// where a few callers behind the same addresses kept sending to one email after being refused
// for it. Those refused requests used to be counted against the whole address's budget (the
// per-address limit was counted first), so fresh logins of other people behind that address got
// 429 at verify (and at start). Limits are now counted narrowest first: a request refused for
// its email is never counted against the address (docs/decisions/rate-limits-and-caches.md, "Every 429 names its limit").
// Default limits, as the black-box run had them; TRUST_PROXY=1 and X-Forwarded-For name each
// caller's address.
let app: TestApp
let smtp: SmtpSink

beforeAll(async () => {
  smtp = await startSmtpSink()
  app = await startApp({ worker: true, env: { SMTP_URL: smtp.url, TRUST_PROXY: "1" } })
})
afterAll(async () => {
  await app?.close()
  await smtp?.close()
})

const ADDRESSES = ["203.0.113.7", "198.51.100.8", "192.0.2.9"]
/** More requests than the per-address default (60/min), all for one email. */
const FLOOD = 70
const FRESH_LOGINS = 10

describe("callers refused for one email do not spend the budget of everyone behind their address", () => {
  /** The Public API calls of one Environment, each from the address it is given. */
  const environment = async () => {
    const b = await app.bootstrap()
    const client = await createClient(app, b)
    const from = (ip: string) => ({ "x-forwarded-for": ip })
    const create = async (ip: string) => {
      const res = await publicApi(app, b, "/auth/transactions", { body: transactionBody(client), headers: from(ip) })
      expect(res.status, res.text).toBe(201)
      return res.json.transaction_id as string
    }
    const start = (ip: string, txn: string, email: string) =>
      publicApi(app, b, `/auth/transactions/${txn}/email/start`, { body: { email }, headers: from(ip) })
    const verify = (ip: string, txn: string, challenge_id: string, code: string) =>
      publicApi(app, b, `/auth/transactions/${txn}/email/verify`, { body: { challenge_id, code }, headers: from(ip) })
    /** A whole login of a new email from `ip`: create, start, read the mailed code, verify. */
    const login = async (ip: string) => {
      const email = uniqueEmail("fresh")
      const txn = await create(ip)
      const started = await start(ip, txn, email)
      if (started.status !== 202) return `start ${started.status} ${started.json?.limit ?? started.json?.code}`
      const code = await smtp.waitForCode(email)
      const verified = await verify(ip, txn, started.json.challenge_id, code)
      return verified.status === 200 ? "ok" : `verify ${verified.status} ${verified.json?.limit ?? verified.json?.code}`
    }
    /** FRESH_LOGINS logins from every address (addresses in parallel), each outcome. */
    const freshLogins = async () =>
      (
        await Promise.all(
          ADDRESSES.map(async (ip) => {
            const mine: Array<string> = []
            for (let i = 0; i < FRESH_LOGINS; i++) mine.push(await login(ip))
            return mine
          }),
        )
      ).flat()
    /** A transaction from `ip` with a code mailed to a new email of its own. */
    const started = async (ip: string) => {
      const email = uniqueEmail("flood")
      const txn = await create(ip)
      const res = await start(ip, txn, email)
      expect(res.status, res.text).toBe(202)
      return { email, txn, challenge: res.json.challenge_id as string }
    }
    const answer = (res: { status: number; json: any }) =>
      res.status === 429 ? `429 ${res.json.limit}` : String(res.status)
    return { start, verify, started, freshLogins, answer }
  }

  it("verify: a caller behind each address verifying wrong codes for its own email past its limit; fresh logins there all verify", async () => {
    const e = await environment()
    const floods = await Promise.all(
      ADDRESSES.map(async (ip) => {
        const own = await e.started(ip)
        const answers: Array<string> = []
        for (let i = 0; i < FLOOD; i++) answers.push(e.answer(await e.verify(ip, own.txn, own.challenge, "000000")))
        return answers
      }),
    )
    expect(await e.freshLogins()).toEqual(Array(ADDRESSES.length * FRESH_LOGINS).fill("ok"))
    for (const answers of floods) {
      // 20 verifies a minute for one email from one address; the rest are refused for that
      // email, and each 429 names that limit.
      expect(answers.slice(0, 20).every((s) => s === "400")).toBe(true)
      expect(new Set(answers.slice(20))).toEqual(new Set(["429 otp_verify:email+ip"]))
    }
  }, 120_000)

  it("start: a caller behind each address starting mails to its own email past its limit; fresh logins there all get their code", async () => {
    const e = await environment()
    const floods = await Promise.all(
      ADDRESSES.map(async (ip) => {
        const own = await e.started(ip)
        const answers: Array<string> = []
        for (let i = 0; i < FLOOD; i++) answers.push(e.answer(await e.start(ip, own.txn, own.email)))
        return answers
      }),
    )
    expect(await e.freshLogins()).toEqual(Array(ADDRESSES.length * FRESH_LOGINS).fill("ok"))
    for (const answers of floods) {
      // 5 mails per 10 minutes to one email from one address (the first start was one).
      expect(answers.slice(0, 4).every((s) => s === "202")).toBe(true)
      expect(new Set(answers.slice(4))).toEqual(new Set(["429 otp_send:email+ip"]))
    }
  }, 120_000)
})
