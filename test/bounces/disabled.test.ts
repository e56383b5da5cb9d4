import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { parseConfig } from "../../src/platform/config.js"
import { allowedSnsUrl, snsCertificateUrl } from "../../src/bounces/sns.js"
import { type TestApp, startApp } from "../support/app.js"
import { expectProblem } from "../management/support/problem.js"

// Without BOUNCE_WEBHOOK_SECRET the generic route does not exist (404), whatever is sent;
// without BOUNCE_SNS_TOPIC_ARNS neither does the SES route (decisions, "Bounces: accepted formats").

let app: TestApp
beforeAll(async () => {
  app = await startApp()
})
afterAll(async () => {
  await app?.close()
})

describe("bounce intake configuration", () => {
  it("the generic route answers 404 not_found when no secret is configured", async () => {
    for (const secret of [undefined, "", "anything"]) {
      const res = await app.request(app.config.managementHost, "/v1/email-bounces", {
        method: "POST",
        body: { delivery_id: `dlv_${"a".repeat(32)}`, recipient: "a@example.com", bounce_type: "hard" },
        headers: secret === undefined ? {} : { "x-bounce-secret": secret },
      })
      expectProblem(res, 404, "not_found")
    }
  })

  it("the SES route answers 404 not_found without BOUNCE_SNS_TOPIC_ARNS, before reading or fetching anything", async () => {
    const message = {
      Type: "SubscriptionConfirmation",
      MessageId: "m-1",
      TopicArn: "arn:aws:sns:eu-west-1:123456789012:anyone",
      Message: "subscribe",
      Timestamp: new Date().toISOString(),
      Token: "tok",
      SubscribeURL: "https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription&Token=tok",
      SignatureVersion: "2",
      Signature: "c2ln",
      SigningCertURL: "https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-x.pem",
    }
    for (const body of [JSON.stringify(message), "not an SNS message"]) {
      expectProblem(
        await app.request(app.config.managementHost, "/v1/email-bounces/sns", {
          method: "POST",
          body,
          headers: { "content-type": "text/plain; charset=UTF-8" },
        }),
        404,
        "not_found",
      )
    }
  })

  it("BOUNCE_SNS_TOPIC_ARNS: SNS topic ARNs only; `*` (any topic) only outside production", () => {
    const production = {
      NODE_ENV: "production",
      DATABASE_URL: "postgres://db.example/auth",
      MASTER_KEY: Buffer.alloc(32, 1).toString("base64url"),
      PLATFORM_DOMAIN: "auth.example.com",
      CANONICAL_ISSUER_HOST: "id.example.com",
      MANAGEMENT_HOST: "api.example.com",
    }
    const topics = "arn:aws:sns:eu-west-1:123456789012:ses-bounces, arn:aws-cn:sns:cn-north-1:210987654321:bounces.fifo"
    expect(parseConfig({ ...production, BOUNCE_SNS_TOPIC_ARNS: topics }).providers.bounces.snsTopicArns).toEqual([
      "arn:aws:sns:eu-west-1:123456789012:ses-bounces",
      "arn:aws-cn:sns:cn-north-1:210987654321:bounces.fifo",
    ])
    expect(parseConfig({ ...production }).providers.bounces.snsTopicArns).toBeUndefined()
    expect(parseConfig({ ...production, BOUNCE_SNS_TOPIC_ARNS: " " }).providers.bounces.snsTopicArns).toBeUndefined()
    const refuse = (env: Record<string, string>, message: RegExp) => {
      let thrown: unknown
      try {
        parseConfig(env)
      } catch (e) {
        thrown = e
      }
      expect((thrown as { message?: string } | undefined)?.message, JSON.stringify(env)).toMatch(message)
      expect((thrown as { message: string }).message).not.toContain("\n")
    }
    refuse(
      { ...production, BOUNCE_SNS_TOPIC_ARNS: "*" },
      /^BOUNCE_SNS_TOPIC_ARNS=\* \(any topic\) is refused when NODE_ENV=production; list the ARNs of your SES bounce topics$/,
    )
    for (const bad of [
      "arn:a",
      "ses-bounces",
      "arn:aws:sqs:eu-west-1:123456789012:q",
      "arn:aws:sns:eu-west-1:1234:x",
      "*, arn:aws:sns:eu-west-1:123456789012:t",
    ]) {
      refuse({ ...production, BOUNCE_SNS_TOPIC_ARNS: bad }, /^BOUNCE_SNS_TOPIC_ARNS: ".+" is not an SNS topic ARN/)
      refuse({ BOUNCE_SNS_TOPIC_ARNS: bad }, /is not an SNS topic ARN/)
    }
    expect(parseConfig({ BOUNCE_SNS_TOPIC_ARNS: "*" }).providers.bounces.snsTopicArns).toBe("any")
  })

  it("a short secret is refused at start; SNS_CERT_URL_PREFIX is refused in production", () => {
    expect(() => parseConfig({ BOUNCE_WEBHOOK_SECRET: "short" })).toThrow(/at least 32 characters/)
    const production = {
      NODE_ENV: "production",
      DATABASE_URL: "postgres://db.example/auth",
      MASTER_KEY: Buffer.alloc(32, 1).toString("base64url"),
      PLATFORM_DOMAIN: "auth.example.com",
      CANONICAL_ISSUER_HOST: "id.example.com",
      MANAGEMENT_HOST: "api.example.com",
    }
    expect(() => parseConfig({ ...production, SNS_CERT_URL_PREFIX: "http://127.0.0.1:1/" })).toThrow(
      /refused when NODE_ENV=production/,
    )
  })

  it("only https://sns.<region>.amazonaws.com(.cn)/ URLs are fetched in production", () => {
    const allowed = [
      "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-abc.pem",
      "https://sns.cn-north-1.amazonaws.com.cn/SimpleNotificationService-abc.pem",
      "https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription&Token=x",
    ]
    const refused = [
      "http://sns.us-east-1.amazonaws.com/cert.pem",
      "https://sns.us-east-1.amazonaws.com.evil.com/cert.pem",
      "https://evil.com/sns.us-east-1.amazonaws.com/cert.pem",
      "https://sns.us-east-1.amazonaws.com:8443/cert.pem",
      "https://user@sns.us-east-1.amazonaws.com/cert.pem",
      "https://s3.amazonaws.com/cert.pem",
      "not a url",
    ]
    for (const url of allowed) expect(allowedSnsUrl(url, undefined), url).toBe(true)
    for (const url of refused) expect(allowedSnsUrl(url, undefined), url).toBe(false)
  })

  it("a certificate is fetched only from SNS's documented path, written in its normalised form", () => {
    const cert = "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-9c6465fa7f48f5cacd23014631ec1136.pem"
    expect(snsCertificateUrl(cert, undefined)).toBe(cert)
    for (const url of [
      "https://sns.us-east-1.amazonaws.com/x1/../SimpleNotificationService-9c6465fa7f48f5cacd23014631ec1136.pem",
      "https://sns.us-east-1.amazonaws.com/%53impleNotificationService-9c6465fa7f48f5cacd23014631ec1136.pem",
      "https://SNS.us-east-1.amazonaws.com/SimpleNotificationService-9c6465fa7f48f5cacd23014631ec1136.pem",
      `${cert}?x=1`,
      `${cert}#x`,
      "https://sns.us-east-1.amazonaws.com/other.pem",
      "https://sns.us-east-1.amazonaws.com/a/SimpleNotificationService-9c6465fa7f48f5cacd23014631ec1136.pem",
      "https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription&Token=x",
    ])
      expect(snsCertificateUrl(url, undefined), url).toBeUndefined()
  })
})
