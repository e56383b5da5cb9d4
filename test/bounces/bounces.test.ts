import { createHmac, hkdfSync, randomBytes } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Effect, Logger, Schema } from "effect"
import { providerMessageIdOf } from "../../src/bounces/deliveries.js"
import { MISSING_HEADERS_WARNING, receiveSns } from "../../src/bounces/service.js"
import { CERTIFICATE_CACHE_CAPACITY, certificateCacheSize, SnsMessage } from "../../src/bounces/sns.js"
import { isAddressSuppressed } from "../../src/bounces/suppression.js"
import { Config } from "../../src/platform/config.js"
import { makeCrypto } from "../../src/platform/crypto.js"
import { dataKeySealContext } from "../../src/platform/hmac-data-keys.js"
import { failureOf } from "../passkeys/support/helpers.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import {
  createClient,
  createTransaction,
  type LoginClientInfo,
  publicApi,
  query,
  type SmtpSink,
  startSmtpSink,
  uniqueEmail,
} from "../login/support.js"
import { expectProblem } from "../management/support/problem.js"
import { type AwsStub, CERT_FILE, sesBounce, signSns, SNS_TOPIC, startAwsStub } from "./sns.js"

// Bounce intake end to end: real SMTP (smtp-server sink), real graphile-worker mail jobs, the
// generic JSON form, and Amazon SES bounces through SNS signed with a test certificate served
// by a local HTTP server (SNS_CERT_URL_PREFIX, dev/test only; ./sns.ts).

const SECRET = "bounce-secret-0123456789-abcdefghijklmnop"

let smtp: SmtpSink
let app: TestApp
let b: Bootstrapped
let client: LoginClientInfo
let aws: AwsStub
let awsBase: string
let awsVisits: Array<string>

beforeAll(async () => {
  aws = await startAwsStub()
  awsBase = aws.base
  awsVisits = aws.visits
  // Answers as Amazon SES's SMTP interface does: "250 Ok <SES message id>".
  smtp = await startSmtpSink({ reply: () => `Ok ${sesMessageId()}` })
  app = await startApp({
    worker: true,
    env: {
      SMTP_URL: smtp.url,
      BOUNCE_WEBHOOK_SECRET: SECRET,
      SNS_CERT_URL_PREFIX: awsBase,
      BOUNCE_SNS_TOPIC_ARNS: SNS_TOPIC,
    },
  })
  b = await app.bootstrap()
  client = await createClient(app, b)
})
afterAll(async () => {
  await app?.close()
  await smtp?.close()
  await aws?.close()
})

let sesCounter = 0
const sesMessageId = () =>
  `0100018c${(++sesCounter).toString(16).padStart(8, "0")}-${randomBytes(4).toString("hex")}-${randomBytes(2).toString("hex")}-000000`

const waitFor = async <T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 15_000): Promise<T> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}
/** Starts Email OTP for `email` and waits until the worker has run the mail job (sent or no-op). */
const startOtp = async (email: string) => {
  const txn = await createTransaction(app, b, client)
  const res = await publicApi(app, b, `/auth/transactions/${txn}/email/start`, { body: { email } })
  expect(res.status, res.text).toBe(202)
  await waitFor(
    async () =>
      (
        await query(
          app,
          `select 1 from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
    where t.identifier = 'send_login_code' and j.payload->>'challenge_id' = $1`,
          [res.json.challenge_id],
        )
      ).length === 0
        ? true
        : undefined,
    "the mail job",
  )
  return res
}
/** The Message-ID and delivery id of the last mail to `email`, as received by the SMTP server. */
const lastMail = (email: string) => {
  const raw = smtp.messagesTo(email).at(-1)!.raw
  return {
    messageId: /^Message-ID: (<[^>]+>)/im.exec(raw)![1]!,
    deliveryId: /^X-Authservice-Delivery-Id: (dlv_[a-z2-7]{32})/im.exec(raw)![1]!,
  }
}
const generic = (body: unknown, secret: string | null = SECRET) =>
  app.request(app.config.managementHost, "/v1/email-bounces", {
    method: "POST",
    body,
    headers: secret === null ? {} : { "x-bounce-secret": secret },
  })
const bouncedEvents = async () =>
  (
    await query<{ envelope: any }>(
      app,
      "select envelope from event_outbox where type = 'email.delivery.bounced' and environment_id = $1 order by seq",
      [b.environment_id],
    )
  ).map((r) => r.envelope)
const createUser = async (email: string) => {
  const res = await app.management(`/v1/users?environment_id=${b.environment_id}`, {
    method: "POST",
    body: { environment_id: b.environment_id, email },
  })
  expect(res.status, res.text).toBe(201)
  return res.json.id as string
}
/**
 * The spec's recipientHash computed independently of the app's code: base64url HMAC-SHA256 of the
 * normalized address under HKDF-SHA256(data key, info "authservice/email-recipient/<workspace>"),
 * where the data key is the `email-recipient` row of hmac_data_keys opened with MASTER_KEY.
 */
const expectedHash = async (email: string) => {
  const [row] = await query<{ key_sealed: string }>(
    app,
    "select key_sealed from hmac_data_keys where purpose = 'email-recipient'",
  )
  const dataKey = await Effect.runPromise(
    makeCrypto({ current: app.config.masterKey! }).open(dataKeySealContext("email-recipient"), row!.key_sealed),
  )
  const key = Buffer.from(
    hkdfSync("sha256", dataKey, Buffer.alloc(0), `authservice/email-recipient/${b.workspace_id}`, 32),
  )
  return createHmac("sha256", key).update(email.trim().toLowerCase()).digest("base64url")
}

describe("deliveries", () => {
  it("each login-code mail carries our delivery id in its Message-ID and a header; the address is stored only as an HMAC", async () => {
    const email = uniqueEmail("tracked")
    await startOtp(email)
    await waitFor(async () => (smtp.messagesTo(email).length === 1 ? true : undefined), "the mail")
    const mail = lastMail(email)
    expect(mail.messageId).toBe(`<${mail.deliveryId}@localhost>`)
    const [row] = await query<Record<string, unknown>>(app, "select * from mail_deliveries where id = $1", [
      mail.deliveryId,
    ])
    expect(row).toMatchObject({
      environment_id: b.environment_id,
      workspace_id: b.workspace_id,
      message_id: mail.messageId,
      purpose: "login_code",
    })
    expect(row!["recipient_hash"]).toBe(await expectedHash(email))
    expect(JSON.stringify(row)).not.toContain(email)
  })
})

describe("generic JSON bounces (X-Bounce-Secret)", () => {
  it("refusals change nothing: no or wrong secret 401, bad body 400, unknown delivery or another recipient 404", async () => {
    const email = uniqueEmail("refused")
    const userId = await createUser(email)
    await startOtp(email)
    const { deliveryId } = lastMail(email)
    const before = (await bouncedEvents()).length
    expectProblem(
      await generic({ delivery_id: deliveryId, recipient: email, bounce_type: "hard" }, null),
      401,
      "unauthorized",
    )
    expectProblem(
      await generic({ delivery_id: deliveryId, recipient: email, bounce_type: "hard" }, SECRET + "x"),
      401,
      "unauthorized",
    )
    expectProblem(
      await generic({ delivery_id: deliveryId, recipient: email, bounce_type: "permanent" }),
      400,
      "invalid_request_body",
    )
    expectProblem(await generic({ recipient: email, bounce_type: "hard" }), 400, "invalid_request")
    expectProblem(
      await generic({ delivery_id: `dlv_${"a".repeat(32)}`, recipient: email, bounce_type: "hard" }),
      404,
      "delivery_not_found",
    )
    expectProblem(
      await generic({ delivery_id: deliveryId, recipient: "someone.else@example.com", bounce_type: "hard" }),
      404,
      "delivery_not_found",
    )
    expect((await bouncedEvents()).length).toBe(before)
    expect(
      (
        await query<{ email_suppressed: boolean }>(app, "select email_suppressed from users where id = $1", [userId])
      )[0]!.email_suppressed,
    ).toBe(false)
    expect(await query(app, "select 1 from mail_bounces where delivery_id = $1", [deliveryId])).toHaveLength(0)
  })

  it("soft: recorded and emitted, nothing suppressed; hard (by Message-ID): suppressed, emitted once; start still answers the same and sends nothing", async () => {
    const email = uniqueEmail("bouncy")
    const userId = await createUser(email)
    await startOtp(email)
    const { deliveryId, messageId } = lastMail(email)

    const soft = await generic({ delivery_id: deliveryId, recipient: email, bounce_type: "soft" })
    expect(soft.status, soft.text).toBe(200)
    expect(soft.json).toEqual({ delivery_id: deliveryId, bounce_type: "soft", duplicate: false, suppressed: false })
    expect(
      (
        await query<{ email_suppressed: boolean }>(app, "select email_suppressed from users where id = $1", [userId])
      )[0]!.email_suppressed,
    ).toBe(false)

    const hard = await generic({ message_id: messageId, recipient: email.toUpperCase(), bounce_type: "hard" })
    expect(hard.json).toEqual({ delivery_id: deliveryId, bounce_type: "hard", duplicate: false, suppressed: true })
    const again = await generic({ message_id: messageId.slice(1, -1), recipient: email, bounce_type: "hard" })
    expect(again.json).toEqual({ delivery_id: deliveryId, bounce_type: "hard", duplicate: true, suppressed: true })

    const mine = (await bouncedEvents()).filter((e) => e.payload.deliveryId === deliveryId)
    expect(mine.map((e) => e.payload)).toEqual([
      { deliveryId, recipientHash: await expectedHash(email), messageId, bounceType: "soft" },
      { deliveryId, recipientHash: await expectedHash(email), messageId, bounceType: "hard" },
    ])
    expect(mine[1]!.payload.recipientHash).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(mine[1]!.actor).toEqual({ type: "system" })
    expect(JSON.stringify(mine)).not.toContain(email.split("@")[0])
    expect(
      (
        await query<{ email_suppressed: boolean }>(app, "select email_suppressed from users where id = $1", [userId])
      )[0]!.email_suppressed,
    ).toBe(true)

    // Email OTP start for the suppressed address: same 202 shape, a no-op job, no mail, login.failed email_suppressed
    const mails = smtp.messagesTo(email).length
    const res = await startOtp(email)
    expect(Object.keys(res.json).sort()).toEqual(["challenge_id", "expires_at"])
    expect(smtp.messagesTo(email).length).toBe(mails)
    const failed = await query<{ envelope: any }>(
      app,
      "select envelope from event_outbox where type = 'login.failed' and envelope->'payload'->>'userId' = $1",
      [userId],
    )
    expect(failed.map((f) => f.envelope.payload.reason)).toEqual(["email_suppressed"])
  })

  it("an unregistered address that hard-bounced is suppressed too (start answers the same, nothing is sent)", async () => {
    const email = uniqueEmail("nobody")
    await startOtp(email)
    const { deliveryId } = lastMail(email)
    expect((await generic({ delivery_id: deliveryId, recipient: email, bounce_type: "hard" })).json.suppressed).toBe(
      true,
    )
    const mails = smtp.messagesTo(email).length
    expect((await startOtp(email)).status).toBe(202)
    expect(smtp.messagesTo(email).length).toBe(mails)
    // another Environment of the Workspace is not affected: its own deliveries, its own suppressions
    expect(
      await query(app, "select environment_id from email_suppressions where delivery_id = $1", [deliveryId]),
    ).toEqual([{ environment_id: b.environment_id }])
  })

  it("concurrent reports of one bounce record and emit it once", async () => {
    const email = uniqueEmail("race")
    await startOtp(email)
    const { deliveryId } = lastMail(email)
    const results = await Promise.all(
      Array.from({ length: 6 }, () => generic({ delivery_id: deliveryId, recipient: email, bounce_type: "hard" })),
    )
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200])
    expect(results.filter((r) => r.json.duplicate === false)).toHaveLength(1)
    expect((await bouncedEvents()).filter((e) => e.payload.deliveryId === deliveryId)).toHaveLength(1)
  })
})

describe("Amazon SES through SNS", () => {
  const signed = (fields: Record<string, string>, version: "1" | "2" = "2", certUrl = `${awsBase}${CERT_FILE}`) =>
    signSns(fields, certUrl, version)
  const post = (message: unknown) =>
    app.request(app.config.managementHost, "/v1/email-bounces/sns", {
      method: "POST",
      body: JSON.stringify(message),
      headers: { "content-type": "text/plain; charset=UTF-8", "x-amz-sns-message-type": "Notification" },
    })

  it("SubscriptionConfirmation (v1) is verified and confirmed by visiting SubscribeURL", async () => {
    const res = await post(
      signed(
        {
          Type: "SubscriptionConfirmation",
          Message: "You have chosen to subscribe",
          Token: "tok123",
          SubscribeURL: `${awsBase}confirm?Action=ConfirmSubscription&Token=tok123`,
        },
        "1",
      ),
    )
    expect(res.status, res.text).toBe(200)
    expect(res.json).toEqual({ type: "SubscriptionConfirmation", processed: 0 })
    expect(awsVisits).toContain("/confirm?Action=ConfirmSubscription&Token=tok123")
  })

  it("a Permanent bounce notification (v2) suppresses; by Message-ID alone too; Transient is soft; a redelivery changes nothing", async () => {
    const email = uniqueEmail("ses")
    const userId = await createUser(email)
    await startOtp(email)
    const first = lastMail(email)
    const res = await post(
      signed({ Type: "Notification", Message: sesBounce(first.deliveryId, first.messageId, email) }),
    )
    expect(res.json).toEqual({ type: "Notification", processed: 1 })
    expect(
      (
        await query<{ email_suppressed: boolean }>(app, "select email_suppressed from users where id = $1", [userId])
      )[0]!.email_suppressed,
    ).toBe(true)
    const again = signed({ Type: "Notification", Message: sesBounce(first.deliveryId, first.messageId, email) })
    expect((await post(again)).json.processed).toBe(0)

    const other = uniqueEmail("ses-soft")
    await startOtp(other)
    const second = lastMail(other)
    const soft = await post(
      signed(
        {
          Type: "Notification",
          Subject: "Amazon SES Email Event Notification",
          Message: sesBounce(undefined, second.messageId, other, "Transient"),
        },
        "1",
      ),
    )
    expect(soft.json.processed).toBe(1)
    expect(
      (await bouncedEvents())
        .filter((e) => e.payload.deliveryId === second.deliveryId)
        .map((e) => e.payload.bounceType),
    ).toEqual(["soft"])
  })

  it("refused: a bad signature, a certificate outside sns.<region>.amazonaws.com, another topic, a SubscribeURL elsewhere -> 403; nothing recorded or visited", async () => {
    const email = uniqueEmail("forged")
    await startOtp(email)
    const { deliveryId, messageId } = lastMail(email)
    const good = signed({ Type: "Notification", Message: sesBounce(deliveryId, messageId, email) })
    expectProblem(
      await post({ ...good, Message: sesBounce(deliveryId, messageId, "victim@example.com") }),
      403,
      "bounce_source_rejected",
    )
    expectProblem(await post({ ...good, SignatureVersion: "1" }), 403, "bounce_source_rejected")
    const visits = awsVisits.length
    expectProblem(
      await post(
        signed(
          { Type: "Notification", Message: sesBounce(deliveryId, messageId, email) },
          "2",
          "https://evil.example.com/cert.pem",
        ),
      ),
      403,
      "bounce_source_rejected",
    )
    expectProblem(
      await post(
        signed(
          { Type: "Notification", Message: sesBounce(deliveryId, messageId, email) },
          "2",
          "https://sns.eu-west-1.amazonaws.com.evil.example/cert.pem",
        ),
      ),
      403,
      "bounce_source_rejected",
    )
    expectProblem(
      await post({ ...good, TopicArn: "arn:aws:sns:eu-west-1:999999999999:other" }),
      403,
      "bounce_source_rejected",
    )
    expectProblem(
      await post(
        signed({
          Type: "SubscriptionConfirmation",
          Message: "x",
          Token: "t",
          SubscribeURL: "https://attacker.example.com/confirm",
        }),
      ),
      403,
      "bounce_source_rejected",
    )
    expect(awsVisits.slice(visits).filter((v) => v !== `/${CERT_FILE}`)).toEqual([])
    expectProblem(await post({ hello: "world" }), 400, "invalid_request_body")
    expect(await query(app, "select 1 from mail_bounces where delivery_id = $1", [deliveryId])).toHaveLength(0)
  })

  it("SES's default (no original headers, its own Message-ID): the bounce matches by the SES message id its SMTP reply gave at send", async () => {
    const email = uniqueEmail("ses-default")
    const userId = await createUser(email)
    await startOtp(email)
    const { deliveryId } = lastMail(email)
    const reply = smtp.messagesTo(email).at(-1)!.reply!
    const sesId = reply.slice("Ok ".length)
    expect(
      (
        await query<{ provider_message_id: string }>(
          app,
          "select provider_message_id from mail_deliveries where id = $1",
          [deliveryId],
        )
      )[0]!.provider_message_id,
    ).toBe(sesId)
    // as SES sends it by default: no mail.headers, and commonHeaders.messageId is SES's own
    const res = await post(
      signed({
        Type: "Notification",
        Message: sesBounce(undefined, `<${sesId}@eu-west-1.amazonses.com>`, email, "Permanent", sesId),
      }),
    )
    expect(res.json).toEqual({ type: "Notification", processed: 1 })
    expect(
      (await bouncedEvents()).filter((e) => e.payload.deliveryId === deliveryId).map((e) => e.payload.bounceType),
    ).toEqual(["hard"])
    expect(
      (
        await query<{ email_suppressed: boolean }>(app, "select email_suppressed from users where id = $1", [userId])
      )[0]!.email_suppressed,
    ).toBe(true)
    // another recipient under the same SES id matches nothing
    const other = await post(
      signed({
        Type: "Notification",
        Message: sesBounce(undefined, "<x@amazonses.com>", "victim@example.com", "Permanent", sesId),
      }),
    )
    expect(other.json.processed).toBe(0)
  })

  it("only an SES reply's id is recorded: other SMTP replies record none", () => {
    expect(providerMessageIdOf("250 Ok 0100018c7a8e9f4d-1d2c3b4a-5e6f-7a8b-9c0d-1e2f3a4b5c6d-000000")).toBe(
      "0100018c7a8e9f4d-1d2c3b4a-5e6f-7a8b-9c0d-1e2f3a4b5c6d-000000",
    )
    for (const reply of [
      undefined,
      "250 OK: message queued",
      "250 2.0.0 Ok: queued as 4XyZ",
      "250 Ok",
      "550 Ok 0100018c7a8e9f4d",
      "250 Ok <x@y>",
    ]) {
      expect(providerMessageIdOf(reply), String(reply)).toBeUndefined()
    }
  })

  it("a bounce without our header that matches nothing logs a warning naming SES's \"Include original headers\"; with the header, or matched by SES's id, none", async () => {
    const run = async (message: Record<string, string>, config = app.config) => {
      const lines: Array<string> = []
      const capture = Logger.make((o) => {
        lines.push(`${o.logLevel} ${JSON.stringify(o.message)}`)
      })
      const decoded = Schema.decodeUnknownSync(SnsMessage)(message)
      const result = await app.run(
        receiveSns(decoded).pipe(Effect.provide(Logger.layer([capture])), Effect.provideService(Config, config)),
      )
      return { result, warnings: lines.filter((l) => l.startsWith("Warn")) }
    }
    const unmatched = await run(
      signed({
        Type: "Notification",
        Message: sesBounce(undefined, "<unknown@amazonses.com>", "a@example.com", "Permanent", "0100018cffffffff-0000"),
      }),
    )
    expect(unmatched.result.processed).toBe(0)
    expect(unmatched.warnings).toHaveLength(1)
    expect(unmatched.warnings[0]).toContain("Include original headers")
    expect(unmatched.warnings[0]).toContain(MISSING_HEADERS_WARNING.slice(0, 40))

    const email = uniqueEmail("ses-quiet")
    await startOtp(email)
    const { deliveryId, messageId } = lastMail(email)
    const withHeader = await run(
      signed({ Type: "Notification", Message: sesBounce(deliveryId, messageId, email, "Transient") }),
    )
    expect([withHeader.result.processed, withHeader.warnings]).toEqual([1, []])
    const sesId = smtp.messagesTo(email).at(-1)!.reply!.slice("Ok ".length)
    const bySesId = await run(
      signed({ Type: "Notification", Message: sesBounce(undefined, "<x@amazonses.com>", email, "Permanent", sesId) }),
    )
    expect([bySesId.result.processed, bySesId.warnings]).toEqual([1, []])

    // BOUNCE_SNS_TOPIC_ARNS=* (development only) lets another topic's verified message in
    const anyTopic = {
      ...app.config,
      providers: {
        ...app.config.providers,
        bounces: { ...app.config.providers.bounces, snsTopicArns: "any" as const },
      },
    }
    const complaint = JSON.stringify({ notificationType: "Complaint", complaint: {}, mail: { messageId: "x" } })
    const elsewhere = signed({
      Type: "Notification",
      Message: complaint,
      TopicArn: "arn:aws:sns:us-east-1:999999999999:someone-else",
    })
    expect((await run(elsewhere, anyTopic)).result).toEqual({ type: "Notification", processed: 0 })
    expect((await failureOf(app, receiveSns(Schema.decodeUnknownSync(SnsMessage)(elsewhere))))._tag).toBe(
      "BounceSourceRejected",
    )
  })

  it("SigningCertURL: path variants are refused unfetched, the certificate cache stays bounded, another topic fetches nothing", async () => {
    const complaint = JSON.stringify({ notificationType: "Complaint", complaint: {}, mail: { messageId: "x" } })
    const message = (certUrl: string, topic = SNS_TOPIC) =>
      signed({ Type: "Notification", Message: complaint, TopicArn: topic }, "2", certUrl)
    // Spellings of the one certificate URL (each would have been another cache entry and fetch).
    const visits = awsVisits.length
    const variants = [
      ...Array.from({ length: 30 }, (_, i) => `${awsBase}x${i}/../${CERT_FILE}`),
      `${awsBase}./${CERT_FILE}`,
      `${awsBase}%53${CERT_FILE.slice(1)}`,
      `${awsBase}${CERT_FILE}?v=1`,
      `${awsBase}${CERT_FILE}#f`,
      `${awsBase}certs/${CERT_FILE}`,
      `${awsBase}cert.pem`,
    ]
    for (const url of variants) expectProblem(await post(message(url)), 403, "bounce_source_rejected")
    expect(awsVisits.slice(visits)).toEqual([])
    // Many distinct certificate names (as if SNS had that many): each is fetched once, and at
    // most CERTIFICATE_CACHE_CAPACITY are kept.
    for (let i = 0; i < CERTIFICATE_CACHE_CAPACITY + 10; i++) {
      const res = await post(message(`${awsBase}SimpleNotificationService-${i.toString(16).padStart(32, "0")}.pem`))
      expect(res.status, res.text).toBe(200)
    }
    expect(awsVisits.length - visits).toBe(CERTIFICATE_CACHE_CAPACITY + 10)
    expect(await app.run(certificateCacheSize)).toBe(CERTIFICATE_CACHE_CAPACITY)
    // The last one is still held: no new fetch.
    const held = awsVisits.length
    expect(
      (
        await post(
          message(
            `${awsBase}SimpleNotificationService-${(CERTIFICATE_CACHE_CAPACITY + 9).toString(16).padStart(32, "0")}.pem`,
          ),
        )
      ).status,
    ).toBe(200)
    expect(awsVisits.length).toBe(held)
    // A topic outside BOUNCE_SNS_TOPIC_ARNS is refused before any certificate is fetched.
    const unknown = `${awsBase}SimpleNotificationService-${"f".repeat(32)}.pem`
    expectProblem(
      await post(message(unknown, "arn:aws:sns:eu-west-1:999999999999:other")),
      403,
      "bounce_source_rejected",
    )
    expect(awsVisits.length).toBe(held)
  })

  it("verified notifications that are not bounces of ours are acknowledged with nothing processed", async () => {
    const complaint = JSON.stringify({ notificationType: "Complaint", complaint: {}, mail: { messageId: "x" } })
    expect((await post(signed({ Type: "Notification", Message: complaint }))).json).toEqual({
      type: "Notification",
      processed: 0,
    })
    expect(
      (
        await post(
          signed({ Type: "Notification", Message: sesBounce(undefined, "<unknown@localhost>", "a@example.com") }),
        )
      ).json.processed,
    ).toBe(0)
    expect((await post(signed({ Type: "Notification", Message: "not json" }))).json.processed).toBe(0)
  })
})

describe("suppressions recorded before the HMAC data key", () => {
  it("a suppression keyed by the master key itself (as before sql/0164) still suppresses while that key is configured", async () => {
    const email = uniqueEmail("legacy")
    const legacy = createHmac(
      "sha256",
      Buffer.from(
        hkdfSync(
          "sha256",
          app.config.masterKey!,
          Buffer.alloc(0),
          `authservice/hmac/email-recipient/${b.workspace_id}`,
          32,
        ),
      ),
    )
      .update(email)
      .digest("base64url")
    const suppressed = () =>
      app.run(
        isAddressSuppressed({
          workspaceId: b.workspace_id,
          environmentId: b.environment_id,
          address: email,
          userFlag: undefined,
        }),
      )
    expect(await suppressed()).toBe(false)
    await query(
      app,
      "insert into email_suppressions (environment_id, recipient_hash, delivery_id, created_at) values ($1, $2, 'dlv_legacy', now())",
      [b.environment_id, legacy],
    )
    expect(await suppressed()).toBe(true)
  })
})
