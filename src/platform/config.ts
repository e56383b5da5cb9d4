import { isIP } from "node:net"
import { Context, Layer } from "effect"
import { parseTrustProxy, type TrustProxy } from "./trust-proxy.js"
import { type ProviderConfig, parseProviderConfig } from "./config-providers.js"
import { commaList } from "./comma-list.js"
import { ConfigInvalid } from "./config-invalid.js"
import { type LogLevelName, parseLogLevel } from "./observability/log-level.js"
import { otelResourceAttributes } from "./observability/otel-resource.js"

/**
 * Every environment variable of the run contract (docs/architecture.md), parsed once at start.
 * A bad value stops the process with one line naming the variable and what to do.
 */
export interface AppConfig {
  readonly port: number
  /**
   * The address the HTTP listener binds (HOST). Development defaults to loopback: the dev
   * mailbox and a generated master key must not be reachable from the network. Production
   * defaults to every interface (undefined), as containers and load balancers expect.
   */
  readonly listenHost: string | undefined
  readonly databaseUrl: string | undefined
  readonly dataDir: string
  readonly platformDomain: string
  readonly canonicalIssuerHost: string
  readonly managementHost: string
  readonly publicScheme: "http" | "https"
  /** Which proxies may report the client address (TRUST_PROXY; src/platform/trust-proxy.ts). */
  readonly trustProxy: TrustProxy
  readonly rateLimits: RateLimits
  readonly smtpUrl: string | undefined
  /**
   * MAIL_ALLOW_DEV_MAILER: with NODE_ENV=production and no SMTP_URL, start anyway with the
   * development mailer (nothing is delivered; see devMailerRefusal in ./mailer.ts).
   */
  readonly allowDevMailer: boolean
  readonly mailFrom: string
  readonly masterKey: Uint8Array | undefined
  readonly masterKeyPrevious: Uint8Array | undefined
  readonly webhookAllowPrivateTargets: boolean
  readonly production: boolean
  /**
   * SOCIAL_PROVIDER_HOSTS (development and tests only, refused in production): provider host
   * names -> the `address:port` to connect to instead, e.g. `accounts.google.com=127.0.0.1:8443`.
   * URLs, TLS names and Host headers stay the provider's own; only the socket's target moves.
   */
  readonly socialProviderHosts: ReadonlyMap<string, { readonly address: string; readonly port: number }>
  /** One log line per request (LOG_REQUESTS, default true). */
  readonly logRequests: boolean
  /** The least severe level written (LOG_LEVEL: debug, info, warn, error; default info). */
  readonly logLevel: LogLevelName
  /** Billing provider, bounce intake, deletion retention (src/platform/config-providers.ts). */
  readonly providers: ProviderConfig
  /**
   * DNS_SERVERS: the resolvers custom-domain validation asks (`ip`, `ip:port` or `[ipv6]:port`,
   * comma-separated); empty: the system's.
   */
  readonly dnsServers: ReadonlyArray<string>
  /** Origins allowed to make cookie-authenticated Management writes (DASHBOARD_ORIGINS). */
  readonly dashboardOrigins: ReadonlyArray<string>
  /** Jobs run at once per worker process (WORKER_CONCURRENCY). */
  readonly workerConcurrency: number
  /** Webhook sends in flight to one receiver origin per worker process (WEBHOOK_MAX_IN_FLIGHT_PER_TARGET). */
  readonly webhookMaxInFlightPerTarget: number
  /** Connecting to Postgres gives up after this long (DATABASE_CONNECT_TIMEOUT_MS). */
  readonly databaseConnectTimeoutMs: number
  /**
   * A statement not answered within this long, waiting for a pooled connection included, fails
   * as a storage outage (503) and is cancelled (DATABASE_STATEMENT_TIMEOUT_MS).
   */
  readonly databaseStatementTimeoutMs: number
  /** Bearer token required at the Prometheus endpoint when set (METRICS_TOKEN). */
  readonly metricsToken: string | undefined
  /** A separate listener for `/metrics` only (METRICS_PORT); the Management host then stops serving it. */
  readonly metricsPort: number | undefined
  /**
   * Where spans are sent over OTLP/HTTP: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, else
   * OTEL_EXPORTER_OTLP_ENDPOINT + `/v1/traces` (the OTLP exporter specification); unset: no tracing.
   */
  readonly otlpTracesUrl: string | undefined
  /**
   * Servers, workers and operator commands apply the migrations at start (MIGRATE_ON_START;
   * default true outside production, false with NODE_ENV=production, where `npm run migrate` is a
   * step of its own and a start against another schema version is refused: src/platform/schema-version.ts).
   */
  readonly migrateOnStart: boolean
  /** OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL: http/protobuf (the default) or http/json. */
  readonly otlpProtocol: OtlpProtocol
  /** The spans' resource: OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME (./observability/otel-resource.ts). */
  readonly otelResource: Readonly<Record<string, string>>
}

export interface RateLimits {
  /** Per client address (IPv4, IPv6 /64) per minute, separately for transaction creation, OTP sends and OTP verifies. */
  readonly ipPerMinute: number
  /** The same, per IPv6 /56 (all its /64s together). */
  readonly ipv6Network56PerMinute: number
  /** The same, per IPv6 /48; below the per-client ceiling, so one /48 cannot reach it. */
  readonly ipv6Network48PerMinute: number
  /** OTP mails to one email address from one client address per 10 minutes. */
  readonly emailPerWindow: number
  /** OTP mails to one email address from all client addresses per hour (the mail-bomb ceiling). */
  readonly emailCeilingPerHour: number
  /**
   * Changes per 10 minutes of an email's one valid OTP code that a caller makes while someone
   * else relies on that code (src/login/email-otp/replacement.ts); beyond it the start or
   * resend is withheld: same answer, no new code, no mail.
   */
  readonly otpCodeChangesPerEmailPer10Minutes: number
  /** Transaction creations per client per minute, from all client addresses (a ceiling, not a per-user limit). */
  readonly clientPerMinute: number
  /** OTP verifies for one email address from one client address per minute. */
  readonly otpVerifyPerEmailPerMinute: number
  /** Wrong OTP codes for one email address from one client address per hour, across challenges and resends. */
  readonly otpFailuresPerEmailPerHour: number
  /** Wrong OTP codes for one email address from all client addresses per hour (then only a challenge's first try is checked). */
  readonly otpFailuresCeilingPerHour: number
  /*
   * The write limits below (docs/decisions/rate-limits-and-caches.md, "Write limits: every cheap-to-send write is
   * counted per address"): per client address per minute (IPv6: the /64, then 10x per /56 and
   * 20x per /48), then a per-Environment ceiling per minute counting only what they let through.
   */
  /** Social login starts (`POST .../social/{provider}/start`) per address. */
  readonly socialStartPerMinute: number
  readonly socialStartCeilingPerMinute: number
  /** Passkey registration/authentication options (transaction routes and /me) per address. */
  readonly passkeyOptionsPerMinute: number
  readonly passkeyOptionsCeilingPerMinute: number
  /** /me writes (every /me route but the GETs) per address. */
  readonly meWritesPerMinute: number
  readonly meWritesCeilingPerMinute: number
  /** Token and revocation requests per client and address (a NAT's SPA users refresh every few minutes). */
  readonly tokenPerMinute: number
  readonly tokenCeilingPerMinute: number
  /** Introspection requests that reach the application, per caller and address. */
  readonly introspectPerMinute: number
  readonly introspectCeilingPerMinute: number
  /** Management API requests per API key or Dashboard user. */
  readonly managementPerMinute: number
  /** `POST /webhooks/{id}/test` per webhook (each makes an outbound request). */
  readonly webhookTestPerMinute: number
}

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
  if (!/^\d+$/.test(raw) || Number(raw) < 1)
    throw new ConfigInvalid({ message: `${name} must be a positive integer (got "${raw}")` })
  return Number(raw)
}

// A counter row holds a window's hits as a Postgres integer, and a process reserves up to an
// eighth of a limit at once (src/rate-limit/leases.ts): a limit past this could overflow the row
// and fail the statement of every window counted with it. A limit this high is no limit.
const MAX_RATE_LIMIT = 1_000_000_000

const rateLimit = (env: Env, name: string, fallback: number): number => {
  const value = positiveInt(env, name, fallback)
  if (value > MAX_RATE_LIMIT)
    throw new ConfigInvalid({ message: `${name} must be at most ${MAX_RATE_LIMIT} (got "${env[name]}")` })
  return value
}

const host = (env: Env, name: string, fallback: string): string => {
  const value = (env[name] ?? fallback).toLowerCase()
  if (!HOST.test(value))
    throw new ConfigInvalid({ message: `${name} must be a host name with an optional :port (got "${env[name]}")` })
  return value
}

export type OtlpProtocol = "http/protobuf" | "http/json"

/**
 * The OTLP protocol of the standard variables. gRPC is refused with the reason rather than
 * ignored: its exporter is not installed (docs/decisions/observability.md, "Traces").
 */
const otlpProtocol = (env: Env): OtlpProtocol => {
  const name = env["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"]
    ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
    : "OTEL_EXPORTER_OTLP_PROTOCOL"
  const raw = env[name] || "http/protobuf"
  if (raw === "http/protobuf" || raw === "http/json") return raw
  throw new ConfigInvalid({
    message:
      raw === "grpc"
        ? `${name}=grpc is not supported: use http/protobuf (the default) or http/json, on the collector's OTLP/HTTP port (4318)`
        : `${name} must be http/protobuf or http/json (got "${raw}")`,
  })
}

const otlpUrl = (env: Env, name: string, suffix: string): string | undefined => {
  const raw = env[name] || undefined
  if (raw === undefined) return undefined
  if (!/^https?:\/\/\S+$/.test(raw))
    throw new ConfigInvalid({
      message: `${name} must be an http:// or https:// URL of an OTLP/HTTP collector (got "${raw}")`,
    })
  return raw.replace(/\/+$/, "") + suffix
}

/**
 * 32 bytes in base64url (what the service generates) or standard base64 with its padding (what
 * `openssl rand -base64 32` prints): one alphabet per key, so a typo cannot pass as the other.
 */
export const parseMasterKey = (name: string, raw: string): Uint8Array => {
  const url = /^[A-Za-z0-9_-]{43}$/.test(raw)
  const standard = /^[A-Za-z0-9+/]{43}=$/.test(raw)
  const bytes = Buffer.from(raw, url ? "base64url" : "base64")
  if (!(url || standard) || bytes.length !== 32) {
    throw new ConfigInvalid({
      message: `${name} must be 32 bytes, random, in base64url (43 characters) or base64 (44 characters); generate one with: openssl rand -base64 32, or: node -e "console.log(require('crypto').randomBytes(32).toString('base64url'))"`,
    })
  }
  return new Uint8Array(bytes)
}

/**
 * DASHBOARD_ORIGINS: comma-separated `scheme://host[:port]` origins of the dashboard, the only
 * pages whose cookie-authenticated writes the Management API accepts (CSRF defence). Default:
 * the Management host's own origin. `http` only for localhost, like PUBLIC_SCHEME.
 */
const dashboardOrigins = (env: Env, fallback: string): ReadonlyArray<string> => {
  const raw = env["DASHBOARD_ORIGINS"]
  if (raw === undefined || raw.trim() === "") return [fallback]
  return raw.split(",").map((entry) => {
    const value = entry.trim().toLowerCase()
    const m = /^(https?):\/\/([^/?#]+)$/.exec(value)
    if (!m || !HOST.test(m[2]!) || (m[1] === "http" && !isLocalHost(m[2]!))) {
      throw new ConfigInvalid({
        message: `DASHBOARD_ORIGINS must list origins like https://dashboard.example.com (http only for localhost; got "${entry.trim()}")`,
      })
    }
    return value
  })
}

/** Parses the environment; throws ConfigInvalid with a one-line message. */
export const parseConfig = (env: Env): AppConfig => {
  const production = env["NODE_ENV"] === "production"
  const rawPort = env["PORT"] ?? "3000"
  if (!/^\d+$/.test(rawPort) || Number(rawPort) > 65535)
    throw new ConfigInvalid({ message: `PORT must be a TCP port number 0-65535 (got "${rawPort}")` })
  const port = Number(rawPort)

  const rawListenHost = env["HOST"] || undefined
  if (rawListenHost !== undefined && isIP(rawListenHost) === 0 && !HOST.test(rawListenHost.toLowerCase())) {
    throw new ConfigInvalid({
      message: `HOST must be an IP address or host name to listen on, e.g. 127.0.0.1 or 0.0.0.0 (got "${rawListenHost}")`,
    })
  }
  const listenHost = rawListenHost ?? (production ? undefined : "127.0.0.1")

  const databaseUrl = env["DATABASE_URL"] || undefined
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigInvalid({ message: "DATABASE_URL must be a postgres:// or postgresql:// URL" })
  }

  const platformDomain = host(env, "PLATFORM_DOMAIN", "localhost")
  if (platformDomain.includes(":"))
    throw new ConfigInvalid({
      message: "PLATFORM_DOMAIN must not carry a port (public hosts take the port of CANONICAL_ISSUER_HOST)",
    })
  const canonicalIssuerHost = host(env, "CANONICAL_ISSUER_HOST", `localhost:${port}`)
  const managementHost = host(env, "MANAGEMENT_HOST", `api.localhost:${port}`)

  const allLocal = [platformDomain, canonicalIssuerHost, managementHost].every(isLocalHost)
  const scheme = env["PUBLIC_SCHEME"] ?? (allLocal ? "http" : "https")
  if (scheme !== "http" && scheme !== "https")
    throw new ConfigInvalid({ message: `PUBLIC_SCHEME must be http or https (got "${scheme}")` })
  if (scheme === "http" && !allLocal) {
    throw new ConfigInvalid({
      message: "PUBLIC_SCHEME=http is only allowed when every public host is localhost or *.localhost; use https",
    })
  }

  // Embedded Postgres runs with development settings (fsync off, synchronous_commit off,
  // a fixed password, data under DATA_DIR): never where data must survive a crash.
  if (production && databaseUrl === undefined) {
    throw new ConfigInvalid({
      message:
        "DATABASE_URL is required when NODE_ENV=production (embedded Postgres is for development only); set it to your Postgres server",
    })
  }

  const masterKeyRaw = env["MASTER_KEY"] || undefined
  if (masterKeyRaw === undefined && production)
    throw new ConfigInvalid({ message: "MASTER_KEY is required when NODE_ENV=production (32 random bytes, base64url)" })
  if (masterKeyRaw === undefined && databaseUrl !== undefined)
    throw new ConfigInvalid({
      message:
        "MASTER_KEY is required when DATABASE_URL is set, so every replica shares it (32 random bytes, base64url)",
    })
  const masterKey = masterKeyRaw === undefined ? undefined : parseMasterKey("MASTER_KEY", masterKeyRaw)
  const previousRaw = env["MASTER_KEY_PREVIOUS"] || undefined
  const masterKeyPrevious = previousRaw === undefined ? undefined : parseMasterKey("MASTER_KEY_PREVIOUS", previousRaw)

  const webhookAllowPrivateTargets = flag(env, "WEBHOOK_ALLOW_PRIVATE_TARGETS")
  if (webhookAllowPrivateTargets && production)
    throw new ConfigInvalid({ message: "WEBHOOK_ALLOW_PRIVATE_TARGETS is refused when NODE_ENV=production" })

  const trustProxy = parseTrustProxy(env["TRUST_PROXY"])
  if (typeof trustProxy === "string") throw new ConfigInvalid({ message: trustProxy })
  const socialProviderHosts = parseProviderHosts(env["SOCIAL_PROVIDER_HOSTS"] || undefined)
  if (socialProviderHosts.size > 0 && production)
    throw new ConfigInvalid({ message: "SOCIAL_PROVIDER_HOSTS is refused when NODE_ENV=production" })

  const smtpUrl = env["SMTP_URL"] || undefined
  if (smtpUrl !== undefined && !/^smtps?:\/\//.test(smtpUrl))
    throw new ConfigInvalid({ message: "SMTP_URL must be an smtp:// or smtps:// URL" })

  const metricsToken = env["METRICS_TOKEN"] || undefined
  if (metricsToken !== undefined && !/^[\x21-\x7e]{16,}$/.test(metricsToken)) {
    throw new ConfigInvalid({ message: "METRICS_TOKEN must be at least 16 printable characters without spaces" })
  }
  const rawMetricsPort = env["METRICS_PORT"] || undefined
  if (rawMetricsPort !== undefined && (!/^\d+$/.test(rawMetricsPort) || Number(rawMetricsPort) > 65535)) {
    throw new ConfigInvalid({ message: `METRICS_PORT must be a TCP port number 0-65535 (got "${rawMetricsPort}")` })
  }
  const otlpTracesUrl =
    otlpUrl(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "") ?? otlpUrl(env, "OTEL_EXPORTER_OTLP_ENDPOINT", "/v1/traces")

  return {
    port,
    listenHost,
    databaseUrl,
    dataDir: env["DATA_DIR"] || "./.data",
    platformDomain,
    canonicalIssuerHost,
    managementHost,
    publicScheme: scheme,
    trustProxy,
    rateLimits: {
      // Numbers and reasoning: docs/decisions/rate-limits-and-caches.md, "Lockout-proof login rate limits".
      ipPerMinute: rateLimit(env, "RATE_LIMIT_IP_PER_MINUTE", 60),
      ipv6Network56PerMinute: rateLimit(env, "RATE_LIMIT_IPV6_56_PER_MINUTE", 600),
      ipv6Network48PerMinute: rateLimit(env, "RATE_LIMIT_IPV6_48_PER_MINUTE", 1200),
      emailPerWindow: rateLimit(env, "RATE_LIMIT_EMAIL_PER_10_MINUTES", 5),
      emailCeilingPerHour: rateLimit(env, "RATE_LIMIT_EMAIL_CEILING_PER_HOUR", 50),
      otpCodeChangesPerEmailPer10Minutes: rateLimit(env, "RATE_LIMIT_OTP_CODE_CHANGES_PER_EMAIL_PER_10_MINUTES", 1),
      clientPerMinute: rateLimit(env, "RATE_LIMIT_CLIENT_PER_MINUTE", 6000),
      otpVerifyPerEmailPerMinute: rateLimit(env, "RATE_LIMIT_OTP_VERIFY_PER_EMAIL_PER_MINUTE", 20),
      otpFailuresPerEmailPerHour: rateLimit(env, "RATE_LIMIT_OTP_FAILURES_PER_EMAIL_PER_HOUR", 20),
      otpFailuresCeilingPerHour: rateLimit(env, "RATE_LIMIT_OTP_FAILURES_CEILING_PER_HOUR", 50),
      // Numbers and reasoning: docs/decisions/rate-limits-and-caches.md, "Write limits: every cheap-to-send write is counted per address".
      socialStartPerMinute: rateLimit(env, "RATE_LIMIT_SOCIAL_START_PER_MINUTE", 60),
      socialStartCeilingPerMinute: rateLimit(env, "RATE_LIMIT_SOCIAL_START_CEILING_PER_MINUTE", 6000),
      passkeyOptionsPerMinute: rateLimit(env, "RATE_LIMIT_PASSKEY_OPTIONS_PER_MINUTE", 60),
      passkeyOptionsCeilingPerMinute: rateLimit(env, "RATE_LIMIT_PASSKEY_OPTIONS_CEILING_PER_MINUTE", 6000),
      meWritesPerMinute: rateLimit(env, "RATE_LIMIT_ME_WRITES_PER_MINUTE", 120),
      meWritesCeilingPerMinute: rateLimit(env, "RATE_LIMIT_ME_WRITES_CEILING_PER_MINUTE", 12000),
      tokenPerMinute: rateLimit(env, "RATE_LIMIT_TOKEN_PER_MINUTE", 3000),
      tokenCeilingPerMinute: rateLimit(env, "RATE_LIMIT_TOKEN_CEILING_PER_MINUTE", 60000),
      introspectPerMinute: rateLimit(env, "RATE_LIMIT_INTROSPECT_PER_MINUTE", 30000),
      introspectCeilingPerMinute: rateLimit(env, "RATE_LIMIT_INTROSPECT_CEILING_PER_MINUTE", 300000),
      managementPerMinute: rateLimit(env, "RATE_LIMIT_MANAGEMENT_PER_MINUTE", 6000),
      webhookTestPerMinute: rateLimit(env, "RATE_LIMIT_WEBHOOK_TEST_PER_MINUTE", 10),
    },
    smtpUrl,
    allowDevMailer: flag(env, "MAIL_ALLOW_DEV_MAILER"),
    mailFrom: env["MAIL_FROM"] || `no-reply@${platformDomain}`,
    masterKey,
    masterKeyPrevious,
    webhookAllowPrivateTargets,
    socialProviderHosts,
    production,
    logRequests: env["LOG_REQUESTS"] === undefined ? true : flag(env, "LOG_REQUESTS"),
    logLevel: parseLogLevel(env["LOG_LEVEL"]),
    providers: parseProviderConfig(env, production),
    dnsServers: dnsServers(env["DNS_SERVERS"]),
    dashboardOrigins: dashboardOrigins(env, `${scheme}://${managementHost}`),
    // Jobs wait on the network far more than on the CPU: many run at once. A receiver gets at
    // most a quarter of them, so one that hangs cannot take every slot (tasks.ts defers the rest).
    workerConcurrency: positiveInt(env, "WORKER_CONCURRENCY", 16),
    webhookMaxInFlightPerTarget: positiveInt(env, "WEBHOOK_MAX_IN_FLIGHT_PER_TARGET", 4),
    // A database that stops answering (frozen, partitioned) must not hold requests and jobs for
    // ever: connects and statements are bounded (decisions: "Worker side at scale and under faults").
    databaseConnectTimeoutMs: positiveInt(env, "DATABASE_CONNECT_TIMEOUT_MS", 5_000),
    databaseStatementTimeoutMs: positiveInt(env, "DATABASE_STATEMENT_TIMEOUT_MS", 15_000),
    metricsToken,
    metricsPort: rawMetricsPort === undefined ? undefined : Number(rawMetricsPort),
    otlpTracesUrl,
    migrateOnStart: env["MIGRATE_ON_START"] ? flag(env, "MIGRATE_ON_START") : !production,
    otlpProtocol: otlpProtocol(env),
    otelResource: otelResourceAttributes(env),
  }
}

/**
 * DNS_SERVERS: `ip`, `ip:port` or `[ipv6]:port`, comma-separated (node:dns `setServers`, which
 * would otherwise throw at start-up without naming the variable).
 */
const dnsServers = (raw: string | undefined): ReadonlyArray<string> =>
  commaList(raw).map((entry) => {
    const m = /^(?:\[([0-9a-fA-F:.]+)\]:(\d{1,5})|([^:]+):(\d{1,5})|([^[\]]+))$/.exec(entry)
    const address = m?.[1] ?? m?.[3] ?? m?.[5]
    const port = m?.[2] ?? m?.[4]
    if (
      address === undefined ||
      isIP(address) === 0 ||
      (port !== undefined && (Number(port) < 1 || Number(port) > 65535))
    )
      throw new ConfigInvalid({
        message: `DNS_SERVERS must list resolvers as ip, ip:port or [ipv6]:port, comma-separated (got "${entry}")`,
      })
    return entry
  })

/** `host=address:port` pairs separated by commas (SOCIAL_PROVIDER_HOSTS). */
const parseProviderHosts = (raw: string | undefined) => {
  const map = new Map<string, { address: string; port: number }>()
  for (const pair of commaList(raw)) {
    const m = /^([a-z0-9.-]+)=([0-9a-fA-F.:]+|\[[0-9a-fA-F:]+\]):(\d{1,5})$/.exec(pair)
    if (!m || Number(m[3]) > 65535)
      throw new ConfigInvalid({ message: `SOCIAL_PROVIDER_HOSTS entries must be host=address:port (got "${pair}")` })
    map.set(m[1]!, { address: m[2]!.replace(/^\[|\]$/g, ""), port: Number(m[3]) })
  }
  return map
}

export const ConfigFrom = (config: AppConfig) => Layer.succeed(Config, config)

/** The port part of the canonical issuer host, which every public host carries (docs/architecture.md, Contract for running it). */
export const publicPortSuffix = (config: AppConfig) => {
  const m = /:(\d+)$/.exec(config.canonicalIssuerHost)
  return m ? `:${m[1]}` : ""
}
