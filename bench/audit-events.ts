// Benchmark: a filtered GET /v1/audit-events (action + created_after) over HTTP against a real
// server with 100,000 audit events in one Environment. Run: npx tsx bench/audit-events.ts
// Target: p50 under 20 ms. Also shows EXPLAIN ANALYZE of the exact listing statement.
import { listAuditEventsStatement } from "../src/management/audit-events/repo.js"
import { database, report, sequential } from "./management-support.js"
import { bootstrap, startServer } from "./support.js"

const EVENTS = Number(process.env["BENCH_AUDIT_EVENTS"] ?? 100_000)
const REQUESTS = Number(process.env["BENCH_REQUESTS"] ?? 500)
const ACTIONS = [
  "user.created",
  "user.updated",
  "user.blocked",
  "user.deleted",
  "session.revoked",
  "login.succeeded",
  "login.failed",
  "passkey.created",
  "passkey.deleted",
  "identity.linked",
  "identity.unlinked",
  "client.created",
  "client.updated",
  "webhook.created",
  "domain.created",
  "api_key.created",
  "user.unblocked",
  "user.sessions_revoked",
  "connection.updated",
  "environment.updated",
]

const server = await startServer()
const db = database(server.env["DATABASE_URL"]!)
try {
  const tenant = bootstrap(server.env)
  const { workspace_id: ws, environment_id: env } = tenant
  const target = { port: server.port, host: `api.localhost:${server.port}`, apiKey: tenant.api_key }
  const measure = (path: string, count = REQUESTS) => sequential(target, path, count)
  const seeded = Date.now()
  // 100,000 events over the last 90 days, 20 actions, 4 actor types, 5% failures.
  await db.query(
    `insert into audit_events (id, workspace_id, environment_id, actor_type, actor_id, action, subject_type, subject_id,
      result, request_id, details, created_at)
    select 'aud_' || translate(md5('a' || i::text), '0189', 'wxyz'), $1, $2,
      (array['api_key','workspace_member','end_user','system'])[1 + i % 4], 'mky_bench',
      ($4::text[])[1 + i % array_length($4::text[], 1)], 'user', 'usr_' || translate(md5('u' || (i % 5000)::text), '0189', 'wxyz'),
      case when i % 20 = 0 then 'failure' else 'success' end, 'req_bench', '{"bench": true}'::jsonb,
      now() - ((i::float / $3::int) * interval '90 days')
    from generate_series(1, $3::int) as i`,
    [ws, env, EVENTS, ACTIONS],
  )
  await db.query("analyze audit_events")
  console.log(`seeded ${EVENTS} audit events in ${env} in ${Date.now() - seeded} ms`)

  const since = new Date(Date.now() - 7 * 86400_000)
  const path = `/v1/audit-events?environment_id=${env}&action=user.blocked&created_after=${encodeURIComponent(since.toISOString())}&limit=100`
  const filtered = await measure(path)
  report(`GET /v1/audit-events action+created_after limit=100 (${REQUESTS} seq.)`, filtered)
  report("GET /v1/audit-events (no filter, limit=25)", await measure(`/v1/audit-events?environment_id=${env}`))
  const [subject] = await db.query<{ subject_id: string }>(
    "select subject_id from audit_events where environment_id = $1 limit 1",
    [env],
  )
  report(
    "GET /v1/audit-events subject_id=<one user>",
    await measure(`/v1/audit-events?environment_id=${env}&subject_id=${subject!.subject_id}`),
  )
  report(
    "GET /v1/audit-events actor_type=system&result=failure (no match)",
    await measure(`/v1/audit-events?environment_id=${env}&actor_type=system&result=failure`),
  )

  console.log("\nEXPLAIN ANALYZE, action + created_after:")
  const plan = await db.explain((sql) =>
    listAuditEventsStatement(
      sql,
      { environmentId: env, action: "user.blocked", createdAfter: since },
      { after: undefined, limit: 100 },
    ),
  )
  console.log(plan)
  const indexed = /Index (Only )?Scan using audit_events_env_action/.test(plan)
  const ok = filtered.p50 < 20 && indexed
  console.log(
    `\n${ok ? "PASS" : "FAIL"}: p50 ${filtered.p50.toFixed(2)} ms (target < 20 ms); filtered listing ${indexed ? "uses" : "does NOT use"} index audit_events_env_action`,
  )
  process.exitCode = ok ? 0 : 1
} finally {
  await db.close()
  await server.stop()
}
process.exit(process.exitCode ?? 0)
