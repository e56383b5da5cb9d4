import { Context, Effect } from "effect"
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client"

const GAUGES_NAMED_LIKE_COUNTERS = [
  "nodejs_active_handles_total",
  "nodejs_active_requests_total",
  "nodejs_active_resources_total",
]

/**
 * The Prometheus metrics of one process (prom-client). Request metrics are labelled by the
 * matched route TEMPLATE in the spec's `{param}` style (`/e/{environment_id}/oauth2/token`,
 * `/v1/clients/{clientId}`), never the raw path, so the
 * label sets stay few and a request costs one counter increment and one histogram observation.
 */
export const makeMetrics = () => {
  const registry = new Registry()
  // The standard process_* and nodejs_* names, unprefixed: the names stock dashboards and alert
  // rules query (docs/decisions/observability.md).
  collectDefaultMetrics({ register: registry })
  // prom-client also reports three gauges named `_total` (nodejs_active_handles_total, ...),
  // which Prometheus reserves for counters; each is the sum over the labelled gauge beside it
  // (`sum(nodejs_active_handles)`), so they go rather than being counted twice under a new name.
  for (const name of GAUGES_NAMED_LIKE_COUNTERS) registry.removeSingleMetric(name)
  const metric = { registers: [registry] }
  return {
    registry,
    httpRequests: new Counter({
      ...metric,
      name: "authservice_http_requests_total",
      help: "HTTP requests answered, by surface, method, route template and status",
      labelNames: ["surface", "method", "route", "status"] as const,
    }),
    httpDuration: new Histogram({
      ...metric,
      name: "authservice_http_request_duration_seconds",
      help: "HTTP request latency, by surface, method, route template and status",
      labelNames: ["surface", "method", "route", "status"] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    }),
    logins: new Counter({
      ...metric,
      name: "authservice_logins_total",
      help: 'Login attempts that reached a verdict, by method and outcome (succeeded or the login.failed reason); refresh-token rotations are not logins (authservice_tokens_issued_total{grant="refresh_token"})',
      labelNames: ["method", "outcome"] as const,
    }),
    tokensIssued: new Counter({
      ...metric,
      name: "authservice_tokens_issued_total",
      help: "Successful token endpoint responses, by grant type",
      labelNames: ["grant"] as const,
    }),
    refreshReuse: new Counter({
      ...metric,
      name: "authservice_refresh_token_reuse_detected_total",
      help: "Refresh-token reuse detections (family and session revoked)",
    }),
    otpSends: new Counter({
      ...metric,
      name: "authservice_otp_emails_total",
      help: "Email OTP mail jobs, by outcome (sent, failed: SMTP refused and the job retries; suppressed; superseded by a resend)",
      labelNames: ["outcome"] as const,
    }),
    rateLimited: new Counter({
      ...metric,
      name: "authservice_rate_limit_refusals_total",
      help: "Requests refused with 429 rate_limited, by limit (the counter's bucket)",
      labelNames: ["bucket"] as const,
    }),
    listenerAnswers: new Counter({
      ...metric,
      name: "authservice_listener_answers_total",
      help: "UserInfo and introspection 200s the listener answered before the application, by endpoint and how (replayed, computed)",
      labelNames: ["endpoint", "how"] as const,
    }),
    webhookDeliveries: new Counter({
      ...metric,
      name: "authservice_webhook_deliveries_total",
      help: "Webhook delivery attempts, by outcome (delivered, failed, exhausted, not_sent)",
      labelNames: ["outcome"] as const,
    }),
    jobs: new Counter({
      ...metric,
      name: "authservice_jobs_total",
      help: "Background job attempts run by this process, by task and outcome (completed, failed)",
      labelNames: ["task", "outcome"] as const,
    }),
    jobDuration: new Histogram({
      ...metric,
      name: "authservice_job_duration_seconds",
      help: "Background job attempt duration, by task",
      labelNames: ["task"] as const,
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60],
    }),
    queueDepth: new Gauge({
      ...metric,
      name: "authservice_job_queue_depth",
      help: "Jobs in the queue at scrape time, by state (due: run_at reached and not locked; scheduled: later; locked: running)",
      labelNames: ["state"] as const,
    }),
    queueLag: new Gauge({
      ...metric,
      name: "authservice_job_queue_lag_seconds",
      help: "Age of the oldest due, unlocked job at scrape time, by task (0 when none waits)",
      labelNames: ["task"] as const,
    }),
    // pg_stat_activity sees the connections of every replica: each process reports the same
    // deployment-wide number, so aggregate it with max(), never sum() (README, "Logs, metrics and traces").
    dbConnections: new Gauge({
      ...metric,
      name: "authservice_db_connections",
      help: "Database connections of the whole deployment (every replica; from pg_stat_activity) at scrape time, by pool and state: the same on every process, aggregate with max(), not sum()",
      labelNames: ["pool", "state"] as const,
    }),
    scrapeError: new Gauge({
      ...metric,
      name: "authservice_metrics_scrape_error",
      help: "1 when the last scrape could not read a part (database: queue depth, delivery lag, db connections) and served without it, else 0",
      labelNames: ["part"] as const,
    }),
    dbPoolMax: new Gauge({
      ...metric,
      name: "authservice_db_pool_max_connections",
      help: "The most Postgres connections this process's SQL clients may hold: the pool and the pipelined reads",
    }),
    workerPool: new Gauge({
      ...metric,
      name: "authservice_worker_db_pool_connections",
      help: "This process's job-runner Postgres pool at scrape time, by state (total, idle, waiting clients)",
      labelNames: ["state"] as const,
    }),
    /** Run before each scrape: parts that own live state (the worker's pool) report it here. */
    beforeScrape: new Set<() => void>(),
  }
}

export type AppMetrics = ReturnType<typeof makeMetrics>

/**
 * The process's metrics. A Reference (with a process-wide default) rather than a required
 * service: counting is a side note of code that must not grow a requirement for it; the
 * application layer provides a fresh set per app so tests that start several stay apart.
 */
export const CurrentMetrics = Context.Reference<AppMetrics>("platform/Metrics", { defaultValue: makeMetrics })

/** Runs `f` on the current metrics: one synchronous call, no allocation beyond the labels. */
export const countWith = (f: (metrics: AppMetrics) => void): Effect.Effect<void> =>
  Effect.map(Effect.service(CurrentMetrics), f)
