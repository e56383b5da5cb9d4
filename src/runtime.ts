import { Effect, Layer, References } from "effect"
import { AuditLive } from "./platform/audit.js"
import { type AppConfig, ConfigFrom } from "./platform/config.js"
import { Crypto, CryptoFromKeyring, type Keyring } from "./platform/crypto.js"
import { DatabaseUrl, PIPELINED_READ_CONNECTIONS, runMigrations, SqlLive } from "./platform/database.js"
import { EventsLive } from "./platform/events/service.js"
import { HmacDataKeysLive } from "./platform/hmac-data-keys.js"
import { RateLimitCountersLive } from "./rate-limit/counters.js"
import { RateLimitLeasesLive } from "./rate-limit/leases.js"
import { DnsResolverLive } from "./management/domains/dns.js"
import { IdsLive } from "./platform/ids.js"
import { KeysLive } from "./platform/keys/service.js"
import { MailerLive } from "./platform/mailer.js"
import { CurrentMetrics, makeMetrics } from "./platform/observability/metrics.js"
import { TracingLive, tracingLayer } from "./platform/observability/tracing.js"
import type { SpanProcessor } from "@opentelemetry/sdk-trace-base"
import { verifyMasterKey, type VerifyMasterKeyOptions } from "./platform/master-key.js"
import { PasskeysLive } from "./passkeys/service.js"
import { installWorkerSchema } from "./platform/worker-schema.js"
import { checkSchemaVersion } from "./platform/schema-version.js"
import { TenancyLive } from "./tenancy/service.js"
import { UsersLive } from "./users/service.js"
import { WebhookSenderLive } from "./webhooks/delivery/send.js"
import { WebhooksLive } from "./webhooks/service.js"
import { BillingLive } from "./billing/live.js"
import { ProviderDiscoveryCacheLive } from "./social/provider-discovery-cache.js"

/**
 * Every service of the application, built on one database URL. The server, the worker,
 * the CLI and the tests all compose this same layer.
 */
export interface AppLayerOptions {
  readonly maxConnections?: number
  /** Spans go to this processor instead of the configured OTLP export (tests: an in-memory exporter). */
  readonly spanProcessor?: SpanProcessor
}

export const AppLayer = (config: AppConfig, databaseUrl: string, keyring: Keyring, options: AppLayerOptions = {}) => {
  const metrics = makeMetrics()
  metrics.dbPoolMax.set((options.maxConnections ?? 10) + PIPELINED_READ_CONNECTIONS)
  const base = Layer.mergeAll(
    ConfigFrom(config),
    Layer.succeed(DatabaseUrl, databaseUrl),
    CryptoFromKeyring(keyring),
    // Each application gets its own metrics registry and, when configured, its tracer.
    Layer.succeed(CurrentMetrics, metrics),
    options.spanProcessor ? tracingLayer(async () => options.spanProcessor!, config.otelResource) : TracingLive(config),
    // Without an exporter no span is recorded at all: Effect's native spans of every
    // withSpan and SQL statement cost 7-15% of the throughput (bench/tracing-overhead.ts).
    options.spanProcessor || config.otlpTracesUrl !== undefined
      ? Layer.empty
      : Layer.succeed(References.TracerEnabled, false),
  )
  const sql = SqlLive({
    maxConnections: options.maxConnections ?? 10,
    connectTimeoutMs: config.databaseConnectTimeoutMs,
    statementTimeoutMs: config.databaseStatementTimeoutMs,
  }).pipe(Layer.provide(base))
  const ids = IdsLive.pipe(Layer.provide(base))
  const hmacDataKeys = HmacDataKeysLive.pipe(Layer.provide(Layer.mergeAll(base, sql)))
  const rateLimitCounters = RateLimitLeasesLive.pipe(Layer.provideMerge(RateLimitCountersLive), Layer.provide(sql))
  const foundation = Layer.mergeAll(base, sql, ids, hmacDataKeys, rateLimitCounters)
  const keys = KeysLive.pipe(Layer.provide(foundation))
  const platform = Layer.mergeAll(EventsLive, AuditLive, keys, TenancyLive.pipe(Layer.provide(keys))).pipe(
    Layer.provideMerge(foundation),
  )
  // Feature services, each built on the platform services.
  const features = Layer.mergeAll(
    UsersLive,
    BillingLive,
    DnsResolverLive,
    PasskeysLive,
    MailerLive,
    WebhooksLive.pipe(Layer.provideMerge(WebhookSenderLive)),
    ProviderDiscoveryCacheLive,
  )
  return features.pipe(Layer.provideMerge(platform))
}

/**
 * Applies our migrations and graphile-worker's (or, with `migrate: false`, refuses a schema of
 * another version than this build's: production, src/platform/schema-version.ts), then checks the
 * master key, which also decides which key the Crypto service seals under (recording the process's
 * heartbeat row when `options.register` is given; src/platform/master-key.ts).
 */
export const prepareDatabase = (
  databaseUrl: string,
  { migrate = true, ...options }: VerifyMasterKeyOptions & { readonly migrate?: boolean } = {},
) =>
  Effect.gen(function* () {
    if (migrate) yield* migrateDatabase(databaseUrl)
    else yield* checkSchemaVersion()
    return yield* verifyMasterKey(yield* Crypto, options)
  })

/** Our migrations, then graphile-worker's schema: what `npm run migrate` applies (src/migrate.ts). */
export const migrateDatabase = (databaseUrl: string) =>
  Effect.gen(function* () {
    const applied = yield* runMigrations
    yield* installWorkerSchema(databaseUrl)
    return applied
  })
