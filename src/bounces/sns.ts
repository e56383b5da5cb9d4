import { createVerify, X509Certificate } from "node:crypto"
import { Cache, Duration, Effect, Exit, Schema } from "effect"
import { BounceSourceRejected } from "./errors.js"

/**
 * Amazon SNS message verification (AWS docs, "Verifying the signatures of Amazon SNS
 * messages"): the string to sign is "Key\nValue\n" for a fixed list of keys per message type;
 * SignatureVersion 1 is SHA1withRSA, 2 is SHA256withRSA, with the certificate at
 * SigningCertURL, which must be an https URL on sns.<region>.amazonaws.com (or .com.cn).
 */
export const SnsMessage = Schema.Struct({
  Type: Schema.Literals(["Notification", "SubscriptionConfirmation", "UnsubscribeConfirmation"]),
  MessageId: Schema.String,
  TopicArn: Schema.String,
  Message: Schema.String,
  Timestamp: Schema.String,
  SignatureVersion: Schema.Literals(["1", "2"]),
  Signature: Schema.String,
  SigningCertURL: Schema.String,
  Subject: Schema.optionalKey(Schema.NullOr(Schema.String)),
  SubscribeURL: Schema.optionalKey(Schema.String),
  Token: Schema.optionalKey(Schema.String),
  UnsubscribeURL: Schema.optionalKey(Schema.String),
})
export type SnsMessage = typeof SnsMessage.Type

const NOTIFICATION_KEYS = ["Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"] as const
const CONFIRMATION_KEYS = ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"] as const

export const stringToSign = (m: SnsMessage) => {
  const keys = m.Type === "Notification" ? NOTIFICATION_KEYS : CONFIRMATION_KEYS
  let out = ""
  for (const key of keys) {
    const value = (m as Record<string, unknown>)[key]
    // Subject is signed only when present (AWS docs).
    if (typeof value !== "string") continue
    out += `${key}\n${value}\n`
  }
  return out
}

const AWS_SNS_URL = /^https:\/\/sns\.[a-z0-9-]+\.amazonaws\.com(\.cn)?\//

/**
 * Where we may fetch a certificate or confirm a subscription: AWS's SNS hosts over https only,
 * or (dev/test only, SNS_CERT_URL_PREFIX, refused in production) one configured prefix.
 */
export const allowedSnsUrl = (url: string, testPrefix: string | undefined) => {
  if (testPrefix !== undefined && url.startsWith(testPrefix)) return true
  if (!URL.canParse(url)) return false
  const parsed = new URL(url)
  return AWS_SNS_URL.test(url) && parsed.username === "" && parsed.password === "" && parsed.port === ""
}

/**
 * The documented shape of a signing certificate's path (AWS docs: the SigningCertURL is
 * `https://sns.<region>.amazonaws.com/SimpleNotificationService-<id>.pem`). Nothing else is fetched.
 */
const CERT_PATH = /^\/SimpleNotificationService-[A-Za-z0-9]{1,64}\.pem$/

/**
 * The one URL a certificate is fetched from and cached under, or undefined when
 * `SigningCertURL` is not a certificate URL of SNS. The URL must already be in its
 * normalised form (what the WHATWG URL parser prints): `/x/../Simple...pem`, `%53imple...`,
 * a query or a fragment would each be another key for the same certificate (docs/decisions/security-hardening.md:
 * an unauthenticated caller must not be able to grow the cache or our outbound fetches).
 */
export const snsCertificateUrl = (url: string, testPrefix: string | undefined): string | undefined => {
  if (!allowedSnsUrl(url, testPrefix) || !URL.canParse(url)) return undefined
  const parsed = new URL(url)
  if (parsed.href !== url || parsed.search !== "" || parsed.hash !== "") return undefined
  // Under the test prefix the certificate sits in the prefix's folder, with SNS's file name.
  const path =
    testPrefix !== undefined && url.startsWith(testPrefix) ? `/${url.slice(testPrefix.length)}` : parsed.pathname
  return CERT_PATH.test(path) ? url : undefined
}

const MAX_CERT_BYTES = 16 * 1024
/**
 * Certificates are public and immutable per URL: each replica keeps the few it fetched (SNS
 * signs with one certificate per region at a time; a rotation adds one). Least recently used
 * ones beyond the bound are dropped; a failed fetch is not kept.
 */
export const CERTIFICATE_CACHE_CAPACITY = 16

const fetchText = (url: string, maxBytes: number) =>
  Effect.tryPromise({
    try: async () => {
      const res = await fetch(url, { redirect: "error", signal: AbortSignal.timeout(5_000) })
      if (!res.ok) throw new Error(`status ${res.status}`)
      const text = await res.text()
      if (text.length > maxBytes) throw new Error("too large")
      return text
    },
    catch: (e) =>
      new BounceSourceRejected({
        detail: `could not fetch ${new URL(url).origin}: ${e instanceof Error ? e.message : "failed"}`,
      }),
  })

const fetchCertificate = Effect.fnUntraced(function* (url: string) {
  const pem = yield* fetchText(url, MAX_CERT_BYTES)
  try {
    new X509Certificate(pem)
  } catch {
    return yield* new BounceSourceRejected({ detail: "SigningCertURL did not serve an X.509 certificate" })
  }
  return pem
})

const certificates = Effect.runSync(
  Cache.makeWith(fetchCertificate, {
    capacity: CERTIFICATE_CACHE_CAPACITY,
    timeToLive: (exit) => (Exit.isSuccess(exit) ? Duration.infinity : Duration.zero),
  }),
)

/** Certificates held by this process (tests: the bound). */
export const certificateCacheSize = Cache.size(certificates)

/** Verifies an SNS message's signature; fails with BounceSourceRejected (nothing is done). */
export const verifySnsMessage = Effect.fnUntraced(function* (m: SnsMessage, testPrefix: string | undefined) {
  const certUrl = snsCertificateUrl(m.SigningCertURL, testPrefix)
  if (certUrl === undefined) {
    return yield* new BounceSourceRejected({ detail: "SigningCertURL is not an Amazon SNS certificate URL" })
  }
  const pem = yield* Cache.get(certificates, certUrl)
  const verifier = createVerify(m.SignatureVersion === "1" ? "RSA-SHA1" : "RSA-SHA256")
  verifier.update(stringToSign(m), "utf8")
  let valid = false
  try {
    valid = verifier.verify(pem, m.Signature, "base64")
  } catch {
    valid = false
  }
  if (!valid) return yield* new BounceSourceRejected({ detail: "SNS signature does not verify" })
})

/** Confirms a subscription by visiting its SubscribeURL (same host rule as the certificate). */
export const confirmSubscription = Effect.fnUntraced(function* (m: SnsMessage, testPrefix: string | undefined) {
  const url = m.SubscribeURL
  if (url === undefined || !allowedSnsUrl(url, testPrefix)) {
    return yield* new BounceSourceRejected({ detail: "SubscribeURL is not an Amazon SNS URL" })
  }
  yield* fetchText(url, 64 * 1024)
})
