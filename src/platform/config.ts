import { Context, Layer, Schema } from "effect"

/**
 * Every environment variable of the run contract (DESIGN.md), parsed once at start.
 * A bad value stops the process with one line naming the variable and what to do.
 */
export interface AppConfig {
  readonly port: number
  readonly databaseUrl: string | undefined
  readonly dataDir: string
  readonly platformDomain: string
  readonly canonicalIssuerHost: string
  readonly managementHost: string
  readonly publicScheme: "http" | "https"
  readonly trustProxy: boolean
  readonly rateLimits: RateLimits
  readonly smtpUrl: string | undefined
  readonly mailFrom: string
  readonly masterKey: Uint8Array | undefined
  readonly masterKeyPrevious: Uint8Array | undefined
  readonly webhookAllowPrivateTargets: boolean
  readonly production: boolean
  /** One log line per request (LOG_REQUESTS, default true). */
  readonly logRequests: boolean
  /** Bearer token required at the Prometheus endpoint when set (METRICS_TOKEN). */
  readonly metricsToken: string | undefined
  /** A separate listener for `/metrics` only (METRICS_PORT); the Management host then stops serving it. */
  readonly metricsPort: number | undefined
  /**
   * Where spans are sent over OTLP/HTTP: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, else
   * OTEL_EXPORTER_OTLP_ENDPOINT + `/v1/traces` (the OTLP exporter specification); unset: no tracing.
   */
  readonly otlpTracesUrl: string | undefined
}

export interface RateLimits {
  /** Requests per window per client IP on login routes. */
  readonly ipPerMinute: number
  /** OTP starts per email per 10 minutes. */
  readonly emailPerWindow: number
  /** Transaction creations per client per minute. */
  readonly clientPerMinute: number
  /** OTP verifies per email per minute. */
  readonly otpVerifyPerEmailPerMinute: number
  /** Wrong OTP codes per email per hour, across challenges and resends. */
  readonly otpFailuresPerEmailPerHour: number
}

export class ConfigInvalid extends Schema.TaggedError<ConfigInvalid>()("ConfigInvalid", {
  message: Schema.String,
}) {}

export class Config extends Context.Service<Config, AppConfig>()("platform/Config") {}

type Env = Readonly<Record<string, string | undefined>>

const HOST = /^(?=.{1,253}(:|$))[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:\d{1,5})?$/

const isLocalHost = (host: string) => {
  const name = host.replace(/:\d+$/, "")
  return name === "localhost" || name.endsWith(".localhost")
}

const flag = (env: Env, name: string): boolean => {
  const raw = env[name]
  if (raw === undefined || raw === "") return false
  if (/^(1|true|yes|on)$/i.test(raw)) return true
  if (/^(0|false|no|off)$/i.test(raw)) return false
  throw new ConfigInvalid({ message: `${name} must be true or false (got "${raw}")` })
}

const positiveInt = (env: Env, name: string, fallback: number): number => {
  const raw = env[name]
  if (raw === undefined || raw === "") return fallback
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new ConfigInvalid({ message: `${name} must be a positive integer (got "${raw}")` })
  return Number(raw)
}

const host = (env: Env, name: string, fallback: string): string => {
  const value = (env[name] ?? fallback).toLowerCase()
  if (!HOST.test(value)) throw new ConfigInvalid({ message: `${name} must be a host name with an optional :port (got "${env[name]}")` })
  return value
}

const otlpUrl = (env: Env, name: string, suffix: string): string | undefined => {
  const raw = env[name] || undefined
  if (raw === undefined) return undefined
  if (!/^https?:\/\/\S+$/.test(raw)) throw new ConfigInvalid({ message: `${name} must be an http:// or https:// URL of an OTLP/HTTP collector (got "${raw}")` })
  return raw.replace(/\/+$/, "") + suffix
}

export const parseMasterKey = (name: string, raw: string): Uint8Array => {
  const bytes = Buffer.from(raw, "base64url")
  if (!/^[A-Za-z0-9_-]+$/.test(raw) || bytes.length !== 32) {
    throw new ConfigInvalid({ message: `${name} must be 32 bytes encoded as base64url (43 characters); generate one with: node -e "console.log(require('crypto').randomBytes(32).toString('base64url'))"` })
  }
  return new Uint8Array(bytes)
}

/** Parses the environment; throws ConfigInvalid with a one-line message. */
export const parseConfig = (env: Env): AppConfig => {
  const production = env["NODE_ENV"] === "production"
  const rawPort = env["PORT"] ?? "3000"
  if (!/^\d+$/.test(rawPort) || Number(rawPort) > 65535) throw new ConfigInvalid({ message: `PORT must be a TCP port number 0-65535 (got "${rawPort}")` })
  const port = Number(rawPort)

  const databaseUrl = env["DATABASE_URL"] || undefined
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigInvalid({ message: "DATABASE_URL must be a postgres:// or postgresql:// URL" })
  }

  const platformDomain = host(env, "PLATFORM_DOMAIN", "localhost")
  if (platformDomain.includes(":")) throw new ConfigInvalid({ message: "PLATFORM_DOMAIN must not carry a port (public hosts take the port of CANONICAL_ISSUER_HOST)" })
  const canonicalIssuerHost = host(env, "CANONICAL_ISSUER_HOST", `localhost:${port}`)
  const managementHost = host(env, "MANAGEMENT_HOST", `api.localhost:${port}`)

  const allLocal = [platformDomain, canonicalIssuerHost, managementHost].every(isLocalHost)
  const scheme = env["PUBLIC_SCHEME"] ?? (allLocal ? "http" : "https")
  if (scheme !== "http" && scheme !== "https") throw new ConfigInvalid({ message: `PUBLIC_SCHEME must be http or https (got "${scheme}")` })
  if (scheme === "http" && !allLocal) {
    throw new ConfigInvalid({ message: "PUBLIC_SCHEME=http is only allowed when every public host is localhost or *.localhost; use https" })
  }

  // Embedded Postgres runs with development settings (fsync off, synchronous_commit off,
  // a fixed password, data under DATA_DIR): never where data must survive a crash.
  if (production && databaseUrl === undefined) {
    throw new ConfigInvalid({ message: "DATABASE_URL is required when NODE_ENV=production (embedded Postgres is for development only); set it to your Postgres server" })
  }

  const masterKeyRaw = env["MASTER_KEY"] || undefined
  if (masterKeyRaw === undefined && production) throw new ConfigInvalid({ message: "MASTER_KEY is required when NODE_ENV=production (32 random bytes, base64url)" })
  if (masterKeyRaw === undefined && databaseUrl !== undefined) throw new ConfigInvalid({ message: "MASTER_KEY is required when DATABASE_URL is set, so every replica shares it (32 random bytes, base64url)" })
  const masterKey = masterKeyRaw === undefined ? undefined : parseMasterKey("MASTER_KEY", masterKeyRaw)
  const previousRaw = env["MASTER_KEY_PREVIOUS"] || undefined
  const masterKeyPrevious = previousRaw === undefined ? undefined : parseMasterKey("MASTER_KEY_PREVIOUS", previousRaw)

  const webhookAllowPrivateTargets = flag(env, "WEBHOOK_ALLOW_PRIVATE_TARGETS")
  if (webhookAllowPrivateTargets && production) throw new ConfigInvalid({ message: "WEBHOOK_ALLOW_PRIVATE_TARGETS is refused when NODE_ENV=production" })

  const smtpUrl = env["SMTP_URL"] || undefined
  if (smtpUrl !== undefined && !/^smtps?:\/\//.test(smtpUrl)) throw new ConfigInvalid({ message: "SMTP_URL must be an smtp:// or smtps:// URL" })

  const metricsToken = env["METRICS_TOKEN"] || undefined
  if (metricsToken !== undefined && !/^[\x21-\x7e]{16,}$/.test(metricsToken)) {
    throw new ConfigInvalid({ message: "METRICS_TOKEN must be at least 16 printable characters without spaces" })
  }
  const rawMetricsPort = env["METRICS_PORT"] || undefined
  if (rawMetricsPort !== undefined && (!/^\d+$/.test(rawMetricsPort) || Number(rawMetricsPort) > 65535)) {
    throw new ConfigInvalid({ message: `METRICS_PORT must be a TCP port number 0-65535 (got "${rawMetricsPort}")` })
  }
  const otlpTracesUrl = otlpUrl(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
    ?? otlpUrl(env, "OTEL_EXPORTER_OTLP_ENDPOINT", "/v1/traces")

  return {
    port,
    databaseUrl,
    dataDir: env["DATA_DIR"] || "./.data",
    platformDomain,
    canonicalIssuerHost,
    managementHost,
    publicScheme: scheme,
    trustProxy: flag(env, "TRUST_PROXY"),
    rateLimits: {
      ipPerMinute: positiveInt(env, "RATE_LIMIT_IP_PER_MINUTE", 60),
      emailPerWindow: positiveInt(env, "RATE_LIMIT_EMAIL_PER_10_MINUTES", 5),
      clientPerMinute: positiveInt(env, "RATE_LIMIT_CLIENT_PER_MINUTE", 120),
      otpVerifyPerEmailPerMinute: positiveInt(env, "RATE_LIMIT_OTP_VERIFY_PER_EMAIL_PER_MINUTE", 20),
      otpFailuresPerEmailPerHour: positiveInt(env, "RATE_LIMIT_OTP_FAILURES_PER_EMAIL_PER_HOUR", 20),
    },
    smtpUrl,
    mailFrom: env["MAIL_FROM"] || `no-reply@${platformDomain}`,
    masterKey,
    masterKeyPrevious,
    webhookAllowPrivateTargets,
    production,
    logRequests: env["LOG_REQUESTS"] === undefined ? true : flag(env, "LOG_REQUESTS"),
    metricsToken,
    metricsPort: rawMetricsPort === undefined ? undefined : Number(rawMetricsPort),
    otlpTracesUrl,
  }
}

export const ConfigFrom = (config: AppConfig) => Layer.succeed(Config, config)

/** The port part of the canonical issuer host, which every public host carries (DESIGN run contract). */
export const publicPortSuffix = (config: AppConfig) => {
  const m = /:(\d+)$/.exec(config.canonicalIssuerHost)
  return m ? `:${m[1]}` : ""
}
