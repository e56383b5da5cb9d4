import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { parseConfig } from "../../src/platform/config.js"
import { allowedSnsUrl, snsCertificateUrl } from "../../src/bounces/sns.js"
import { type TestApp, startApp } from "../support/app.js"
import { expectProblem } from "../management-extra/helpers.js"

// Without BOUNCE_WEBHOOK_SECRET the generic route does not exist (404), whatever is sent.

let app: TestApp
beforeAll(async () => { app = await startApp() })
afterAll(async () => { await app?.close() })

describe("bounce intake configuration", () => {
  it("the generic route answers 404 not_found when no secret is configured", async () => {
    for (const secret of [undefined, "", "anything"]) {
      const res = await app.request(app.config.managementHost, "/v1/email-bounces", {
        method: "POST", body: { delivery_id: `dlv_${"a".repeat(32)}`, recipient: "a@example.com", bounce_type: "hard" },
        headers: secret === undefined ? {} : { "x-bounce-secret": secret },
      })
      expectProblem(res, 404, "not_found")
    }
  })

  it("a short secret is refused at start; SNS_CERT_URL_PREFIX is refused in production", () => {
    expect(() => parseConfig({ BOUNCE_WEBHOOK_SECRET: "short" })).toThrow(/at least 32 characters/)
    const production = {
      NODE_ENV: "production", DATABASE_URL: "postgres://db.example/auth", MASTER_KEY: Buffer.alloc(32, 1).toString("base64url"), PLATFORM_DOMAIN: "auth.example.com",
      CANONICAL_ISSUER_HOST: "id.example.com", MANAGEMENT_HOST: "api.example.com",
    }
    expect(() => parseConfig({ ...production, SNS_CERT_URL_PREFIX: "http://127.0.0.1:1/" })).toThrow(/refused when NODE_ENV=production/)
    expect(parseConfig({ ...production, BOUNCE_SNS_TOPIC_ARNS: "arn:a, arn:b" }).providers.bounces.snsTopicArns).toEqual(["arn:a", "arn:b"])
  })

  it("only https://sns.<region>.amazonaws.com(.cn)/ URLs are fetched in production", () => {
    const allowed = [
      "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-abc.pem",
      "https://sns.cn-north-1.amazonaws.com.cn/SimpleNotificationService-abc.pem",
      "https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription&Token=x",
    ]
    const refused = [
      "http://sns.us-east-1.amazonaws.com/cert.pem", "https://sns.us-east-1.amazonaws.com.evil.com/cert.pem",
      "https://evil.com/sns.us-east-1.amazonaws.com/cert.pem", "https://sns.us-east-1.amazonaws.com:8443/cert.pem",
      "https://user@sns.us-east-1.amazonaws.com/cert.pem", "https://s3.amazonaws.com/cert.pem", "not a url",
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
      `${cert}?x=1`, `${cert}#x`, "https://sns.us-east-1.amazonaws.com/other.pem",
      "https://sns.us-east-1.amazonaws.com/a/SimpleNotificationService-9c6465fa7f48f5cacd23014631ec1136.pem",
      "https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription&Token=x",
    ]) expect(snsCertificateUrl(url, undefined), url).toBeUndefined()
  })
})
