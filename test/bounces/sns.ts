import { createSign } from "node:crypto"
import { readFileSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { join } from "node:path"

// Amazon SNS as the bounce tests need it: a local stand-in for the certificate and
// subscription-confirmation URLs (SNS_CERT_URL_PREFIX, dev/test only), and messages signed as
// AWS signs them. The certificate and key in ./fixtures were made once with
// `openssl req -x509 -newkey rsa:2048` for these tests only.

const FIXTURES = join(import.meta.dirname, "fixtures")
const SIGNING_KEY = readFileSync(join(FIXTURES, "sns-signing.key"), "utf8")
const CERT = readFileSync(join(FIXTURES, "sns-signing.pem"), "utf8")

export const SNS_TOPIC = "arn:aws:sns:eu-west-1:123456789012:ses-bounces"
/** SNS's documented certificate file name (AWS docs: SigningCertURL), served by the stub. */
export const CERT_FILE = "SimpleNotificationService-0123456789abcdef0123456789abcdef.pem"

export interface AwsStub {
  /** Its URL, ending in `/`: the SNS_CERT_URL_PREFIX. */
  readonly base: string
  /** Every path visited, in order. */
  readonly visits: Array<string>
  readonly close: () => Promise<void>
}

/** Serves the signing certificate at /SimpleNotificationService-<id>.pem and answers subscription confirmations at /confirm. */
export const startAwsStub = async (): Promise<AwsStub> => {
  const visits: Array<string> = []
  const server: Server = createServer((req, res) => {
    visits.push(req.url ?? "")
    if (/^\/SimpleNotificationService-[a-z0-9]+\.pem$/.test(req.url ?? ""))
      return void res.writeHead(200, { "content-type": "application/x-pem-file" }).end(CERT)
    if (req.url?.startsWith("/confirm"))
      return void res.writeHead(200, { "content-type": "text/xml" }).end("<ConfirmSubscriptionResponse/>")
    res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    visits,
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

const SIGNED_KEYS = {
  Notification: ["Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"],
  SubscriptionConfirmation: ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"],
} as const

/** Signs an SNS message as AWS does (SignatureVersion 1: SHA1withRSA, 2: SHA256withRSA). */
export const signSns = (fields: Record<string, string>, certUrl: string, version: "1" | "2" = "2") => {
  const m: Record<string, string> = {
    MessageId: crypto.randomUUID(),
    TopicArn: SNS_TOPIC,
    Timestamp: new Date().toISOString(),
    ...fields,
  }
  const text = SIGNED_KEYS[m["Type"] as keyof typeof SIGNED_KEYS]
    .filter((k) => m[k] !== undefined)
    .map((k) => `${k}\n${m[k]}\n`)
    .join("")
  const signature = createSign(version === "1" ? "RSA-SHA1" : "RSA-SHA256")
    .update(text)
    .sign(SIGNING_KEY, "base64")
  return { ...m, SignatureVersion: version, Signature: signature, SigningCertURL: certUrl }
}

/** The SES bounce notification SNS carries in `Message`. */
export const sesBounce = (
  deliveryId: string | undefined,
  messageId: string,
  recipient: string,
  bounceType = "Permanent",
  sesId = "0100018c-ses-internal-id",
) =>
  JSON.stringify({
    notificationType: "Bounce",
    bounce: {
      bounceType,
      bounceSubType: "General",
      bouncedRecipients: [{ emailAddress: recipient, status: "5.1.1" }],
      timestamp: new Date().toISOString(),
    },
    mail: {
      messageId: sesId,
      source: "no-reply@localhost",
      destination: [recipient],
      headers: deliveryId === undefined ? [] : [{ name: "X-Authservice-Delivery-Id", value: deliveryId }],
      commonHeaders: { messageId, subject: "Your sign-in code" },
    },
  })
