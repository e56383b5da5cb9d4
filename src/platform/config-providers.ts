import { commaList } from "./comma-list.js"
import { ConfigInvalid } from "./config-invalid.js"

type Env = Readonly<Record<string, string | undefined>>

/** Stripe (spec: billing sessions). All three variables, or none (billing not configured). */
export interface StripeConfig {
  readonly secretKey: string
  readonly priceId: string
  readonly webhookSecret: string
  /** STRIPE_API_BASE (dev/test only): where the `stripe` package sends its requests. */
  readonly apiBase: URL | undefined
}

/** Bounce intake (decisions, "Bounces"). */
export interface BounceConfig {
  /** BOUNCE_WEBHOOK_SECRET: the secret of the generic JSON route; unset: that route answers 404. */
  readonly secret: string | undefined
  /** SNS_CERT_URL_PREFIX (dev/test only): an extra allowed prefix for SNS certificate and subscribe URLs. */
  readonly snsUrlPrefix: string | undefined
  /**
   * BOUNCE_SNS_TOPIC_ARNS: the SNS topics whose SES bounce notifications are accepted; unset:
   * SES intake is off (its route answers 404); `*` (development and tests only): every topic.
   */
  readonly snsTopicArns: ReadonlyArray<string> | "any" | undefined
}

export interface ProviderConfig {
  readonly stripe: StripeConfig | undefined
  readonly bounces: BounceConfig
  /** USER_DELETION_RETENTION_DAYS: days a user stays `pending_deletion` before the purge. */
  readonly userDeletionRetentionDays: number
}

const devOnly = (env: Env, name: string, production: boolean) => {
  const value = env[name] || undefined
  if (value !== undefined && production)
    throw new ConfigInvalid({ message: `${name} is refused when NODE_ENV=production` })
  return value
}

/** arn:<partition>:sns:<region>:<12-digit account>:<topic name> (AWS SNS topic ARN format). */
const SNS_TOPIC_ARN = /^arn:aws(-[a-z]+)*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$/

/**
 * BOUNCE_SNS_TOPIC_ARNS (decisions, "Bounces: accepted formats"): without it the SES route is
 * off. Any verified topic (`*`) would let every AWS account's topic in and have its
 * subscription confirmed: development and tests only.
 */
const parseTopicArns = (raw: string | undefined, production: boolean): ReadonlyArray<string> | "any" | undefined => {
  const entries = commaList(raw)
  if (entries.length === 0) return undefined
  if (entries.length === 1 && entries[0] === "*") {
    if (production)
      throw new ConfigInvalid({
        message:
          "BOUNCE_SNS_TOPIC_ARNS=* (any topic) is refused when NODE_ENV=production; list the ARNs of your SES bounce topics",
      })
    return "any"
  }
  const bad = entries.find((t) => !SNS_TOPIC_ARN.test(t))
  if (bad !== undefined)
    throw new ConfigInvalid({
      message: `BOUNCE_SNS_TOPIC_ARNS: "${bad}" is not an SNS topic ARN (arn:aws:sns:<region>:<account>:<topic>)`,
    })
  return entries
}

/** The configuration of billing, bounce and retention providers and policies, parsed with the rest (parseConfig). */
export const parseProviderConfig = (env: Env, production: boolean): ProviderConfig => {
  const stripeNames = ["STRIPE_SECRET_KEY", "STRIPE_PRICE_ID", "STRIPE_WEBHOOK_SECRET"] as const
  const given = stripeNames.filter((n) => (env[n] ?? "") !== "")
  if (given.length > 0 && given.length < 3) {
    throw new ConfigInvalid({
      message: `Stripe needs ${stripeNames.join(", ")} together (missing: ${stripeNames.filter((n) => !given.includes(n)).join(", ")})`,
    })
  }
  const apiBaseRaw = devOnly(env, "STRIPE_API_BASE", production)
  let apiBase: URL | undefined
  if (apiBaseRaw !== undefined) {
    apiBase = URL.canParse(apiBaseRaw) ? new URL(apiBaseRaw) : undefined
    if (!apiBase || !/^https?:$/.test(apiBase.protocol))
      throw new ConfigInvalid({ message: `STRIPE_API_BASE must be an http(s) URL (got "${apiBaseRaw}")` })
  }
  const snsTopicArns = parseTopicArns(env["BOUNCE_SNS_TOPIC_ARNS"], production)
  const secret = env["BOUNCE_WEBHOOK_SECRET"] || undefined
  if (secret !== undefined && secret.length < 32)
    throw new ConfigInvalid({ message: "BOUNCE_WEBHOOK_SECRET must be at least 32 characters" })
  const rawDays = env["USER_DELETION_RETENTION_DAYS"]
  if (rawDays !== undefined && rawDays !== "" && !/^\d+$/.test(rawDays)) {
    throw new ConfigInvalid({
      message: `USER_DELETION_RETENTION_DAYS must be a whole number of days (got "${rawDays}")`,
    })
  }
  return {
    stripe:
      given.length === 3
        ? {
            secretKey: env["STRIPE_SECRET_KEY"]!,
            priceId: env["STRIPE_PRICE_ID"]!,
            webhookSecret: env["STRIPE_WEBHOOK_SECRET"]!,
            apiBase,
          }
        : undefined,
    bounces: {
      secret,
      snsUrlPrefix: devOnly(env, "SNS_CERT_URL_PREFIX", production),
      snsTopicArns,
    },
    userDeletionRetentionDays: rawDays === undefined || rawDays === "" ? 30 : Number(rawDays),
  }
}
