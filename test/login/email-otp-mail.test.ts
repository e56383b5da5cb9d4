import { Effect, Logger } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { sendLoginCode } from "../../src/login/email-otp/mail-job.js"
import { Mailer } from "../../src/platform/mailer.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { createClient, createTransaction, type LoginClientInfo, publicApi, query, uniqueEmail } from "./support.js"

// No worker and no SMTP_URL here: the jobs stay in the queue where the test can inspect
// them, and the development mailer keeps what the job sends.

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

interface Job {
  id: string
  payload: Record<string, unknown>
}
// graphile-worker's public `jobs` view has no payload column: read its private table.
const jobsFor = (challengeId: string) =>
  query<Job>(
    app,
    `select j.id::text, j.payload from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
    where t.identifier = 'send_login_code' and j.payload->>'challenge_id' = $1`,
    [challengeId],
  )

const createUser = async (email: string) => {
  const res = await app.management(`/v1/users?environment_id=${b.environment_id}`, {
    method: "POST",
    body: { environment_id: b.environment_id, email },
  })
  expect(res.status, res.text).toBe(201)
  return res.json.id as string
}

const devMail = () => app.run(Mailer.use((m) => Effect.succeed(m.sent())))

describe("no enumeration at start (spec: Email OTP rule 1; docs/architecture.md)", () => {
  it("new, registered, suppressed and blocked addresses: same status and body shape, one sealed mail job each", async () => {
    const fresh = uniqueEmail("fresh")
    const registered = uniqueEmail("registered")
    const suppressed = uniqueEmail("suppressed")
    const blocked = uniqueEmail("blocked")
    await createUser(registered)
    const suppressedId = await createUser(suppressed)
    await query(app, "update users set email_suppressed = true where id = $1", [suppressedId])
    const blockedId = await createUser(blocked)
    await query(app, "update users set status = 'blocked' where id = $1", [blockedId])

    const answers = []
    for (const email of [fresh, registered, suppressed, blocked]) {
      const txn = await createTransaction(app, b, client)
      const res = await publicApi(app, b, `/auth/transactions/${txn}/email/start`, { body: { email } })
      answers.push({ email, res })
    }
    for (const { email, res } of answers) {
      expect(res.status, email).toBe(202)
      expect(Object.keys(res.json).sort()).toEqual(["challenge_id", "expires_at"])
      expect(
        Object.keys(res.headers)
          .filter((h) => !["date", "x-request-id", "content-length"].includes(h))
          .sort(),
      ).toEqual(
        Object.keys(answers[0]!.res.headers)
          .filter((h) => !["date", "x-request-id", "content-length"].includes(h))
          .sort(),
      )
      const jobs = await jobsFor(res.json.challenge_id)
      expect(jobs, email).toHaveLength(1)
      expect(Object.keys(jobs[0]!.payload).sort()).toEqual(["challenge_id", "environment_id", "generation", "sealed"])
      // neither the address nor anything readable is in the queue
      expect(JSON.stringify(jobs[0]!.payload)).not.toContain(email.split("@")[0]!)
    }

    // Running the jobs: the suppressed address gets nothing, the others get their code.
    const before = (await devMail()).length
    for (const { res } of answers) {
      const [job] = await jobsFor(res.json.challenge_id)
      await app.run(sendLoginCode(job!.payload))
    }
    const sent = (await devMail()).slice(before)
    expect(sent.map((m) => m.to).sort()).toEqual([blocked, fresh, registered].sort())
    for (const m of sent) {
      const code = /sign-in code is (\d{6})/.exec(m.text)![1]!
      const [job] = await jobsFor(answers.find((a) => a.email === m.to)!.res.json.challenge_id)
      expect(JSON.stringify(job!.payload)).not.toContain(code)
    }
    // the suppressed address is recorded as login.failed email_suppressed (for the customer's webhooks)
    const failed = await query<{ envelope: { payload: Record<string, unknown> } }>(
      app,
      "select envelope from event_outbox where environment_id = $1 and type = 'login.failed'",
      [b.environment_id],
    )
    expect(failed.map((e) => e.envelope.payload)).toContainEqual(
      expect.objectContaining({ userId: suppressedId, reason: "email_suppressed" }),
    )
  })

  it("a registered account's code goes to the account's address, never to a look-alike typed at start or resend", async () => {
    const email = uniqueEmail("kelvin")
    await createUser(email)
    // U+212A KELVIN SIGN lowercases to "k": the look-alike finds the account.
    const lookalike = `\u212A${email.slice(1)}`
    const txn = await createTransaction(app, b, client)
    const res = await publicApi(app, b, `/auth/transactions/${txn}/email/start`, { body: { email: lookalike } })
    expect(res.status, res.text).toBe(202)
    const [job] = await jobsFor(res.json.challenge_id)
    await app.run(sendLoginCode(job!.payload))
    expect((await devMail()).at(-1)!.to).toBe(email)
    await app.advance("61 seconds")
    const resent = await publicApi(app, b, `/auth/transactions/${txn}/email/resend`, {
      body: { challenge_id: res.json.challenge_id },
    })
    expect(resent.status, resent.text).toBe(202)
    const jobs = await jobsFor(res.json.challenge_id)
    await app.run(sendLoginCode(jobs.at(-1)!.payload))
    expect((await devMail()).at(-1)!.to).toBe(email)
  })

  it("a job whose code was superseded meanwhile sends nothing", async () => {
    const email = uniqueEmail()
    const txn = await createTransaction(app, b, client)
    const first = await publicApi(app, b, `/auth/transactions/${txn}/email/start`, { body: { email } })
    const second = await publicApi(app, b, `/auth/transactions/${txn}/email/start`, { body: { email } })
    expect([first.status, second.status]).toEqual([202, 202])
    const before = (await devMail()).length
    const [old] = await jobsFor(first.json.challenge_id)
    await app.run(sendLoginCode(old!.payload))
    expect((await devMail()).length).toBe(before)
    const [current] = await jobsFor(second.json.challenge_id)
    await app.run(sendLoginCode(current!.payload))
    expect((await devMail()).length).toBe(before + 1)
  })

  it("a tampered payload is refused (the seal binds challenge and generation)", async () => {
    const email = uniqueEmail()
    const txn = await createTransaction(app, b, client)
    const res = await publicApi(app, b, `/auth/transactions/${txn}/email/start`, { body: { email } })
    const [job] = await jobsFor(res.json.challenge_id)
    await expect(app.run(sendLoginCode({ ...job!.payload, generation: 2 }))).rejects.toThrow()
  })

  it("the development mailer logs the masked recipient and subject, never the code or the address", async () => {
    const email = uniqueEmail("logged")
    const txn = await createTransaction(app, b, client)
    const res = await publicApi(app, b, `/auth/transactions/${txn}/email/start`, { body: { email } })
    const [job] = await jobsFor(res.json.challenge_id)
    const lines: Array<string> = []
    const capture = Logger.make((o) => {
      lines.push(JSON.stringify(o.message))
    })
    await app.run(sendLoginCode(job!.payload).pipe(Effect.provide(Logger.layer([capture]))))
    const sent = (await devMail()).at(-1)!
    const code = /sign-in code is (\d{6})/.exec(sent.text)![1]!
    expect(lines.join("\n")).toContain("dev mailer")
    // The line names the page where the code is (the Environment's development mailbox).
    expect(lines.join("\n")).toContain(`"mailbox":"http://${b.interaction_domain}/login/dev-mailbox"`)
    expect(lines.join("\n")).not.toContain(code)
    expect(lines.join("\n")).not.toContain(email)
  })
})

describe("development mailbox (local development without SMTP)", () => {
  it("shows the dev mailer's messages, codes included, on the Interaction Domain", async () => {
    const email = uniqueEmail("mailbox")
    const txn = await createTransaction(app, b, client)
    const res = await publicApi(app, b, `/auth/transactions/${txn}/email/start`, { body: { email } })
    const [job] = await jobsFor(res.json.challenge_id)
    await app.run(sendLoginCode(job!.payload))
    const code = /sign-in code is (\d{6})/.exec((await devMail()).at(-1)!.text)![1]!
    const page = await app.request(b.interaction_domain, "/login/dev-mailbox")
    expect(page.status).toBe(200)
    expect(page.headers["content-security-policy"]).toContain("frame-ancestors 'none'")
    expect(page.text).toContain(email)
    expect(page.text).toContain(code)
  })
})
