// Benchmark: GET /v1/users?environment_id=...&limit=100 over HTTP against a real server with
// 10,000 users in one Environment. Run: npx tsx bench/users-list.ts  (DATABASE_URL optional)
// Target: p50 under 20 ms. Also shows EXPLAIN ANALYZE of the exact listing statement.
import { listUsersStatement } from "../src/management/users/repo.js"
import { database, report, sequential } from "./management-support.js"
import { bootstrap, startServer } from "./support.js"

const USERS = Number(process.env["BENCH_USERS"] ?? 10_000)
const REQUESTS = Number(process.env["BENCH_REQUESTS"] ?? 500)

const server = await startServer()
const db = database(server.env["DATABASE_URL"]!)
try {
  const tenant = bootstrap(server.env)
  const { workspace_id: ws, environment_id: env } = tenant
  const target = { port: server.port, host: `api.localhost:${server.port}`, apiKey: tenant.api_key }
  const measure = (path: string, count = REQUESTS) => sequential(target, path, count)
  const seeded = Date.now()
  // Ids follow the `usr_` + 32 [a-z2-7] format (md5 hex mapped into the alphabet). A second
  // Environment with as many users makes the Environment filter do real work.
  const other = bootstrap(server.env)
  for (const [workspace, environment] of [
    [ws, env],
    [other.workspace_id, other.environment_id],
  ] as const) {
    await db.query(
      `insert into users (id, workspace_id, environment_id, email, email_normalized, email_verified, name, locale,
        timezone, metadata, user_handle, created_at, updated_at)
      select 'usr_' || translate(md5($2 || i::text), '0189', 'wxyz'), $1, $2, 'User' || i || '@example.com', 'user' || i || '@example.com',
        i % 2 = 0, (array['Ada','Grace','Alan','Edsger','Barbara','Donald','Frances','John','Margaret','Ken','Radia','Tim',
          'Leslie','Niklaus','Katherine','Dennis','Hedy','Linus','Shafi','Whitfield'])[1 + i % 20] || ' ' ||
          (array['Lovelace','Hopper','Turing','Dijkstra','Liskov','Knuth','Allen','Backus','Hamilton','Thompson','Perlman',
          'Berners-Lee','Lamport','Wirth','Johnson','Ritchie','Lamarr','Torvalds','Goldwasser','Diffie'])[1 + (i / 20) % 20], 'en-US', 'Europe/Paris', jsonb_build_object('plan', 'pro', 'n', i),
        md5('h' || $2 || i::text), now() - (i || ' seconds')::interval, now()
      from generate_series(1, $3::int) as i`,
      [workspace, environment, USERS],
    )
  }
  await db.query("analyze users")
  console.log(`seeded ${USERS} users in ${env} in ${Date.now() - seeded} ms`)

  const firstPage = await measure(`/v1/users?environment_id=${env}&limit=100`)
  report(`GET /v1/users limit=100 (${REQUESTS} sequential)`, firstPage)
  console.log(`  response body ${firstPage.bytes} bytes`)

  // A page deep in the keyset (cursor after the 5000th id) and a search, for comparison.
  const [middle] = await db.query<{ id: string }>(
    "select id from users where environment_id = $1 order by id offset 5000 limit 1",
    [env],
  )
  const cursor = Buffer.from(middle!.id).toString("base64url")
  report(
    "GET /v1/users limit=100 cursor (middle page)",
    await measure(`/v1/users?environment_id=${env}&limit=100&cursor=${cursor}`),
  )
  report("GET /v1/users search=user123 (email prefix)", await measure(`/v1/users?environment_id=${env}&search=user123`))
  report("GET /v1/users search=ovelac (name substring)", await measure(`/v1/users?environment_id=${env}&search=ovelac`))
  report("GET /v1/users search=e (matches almost everyone)", await measure(`/v1/users?environment_id=${env}&search=e`))

  console.log("\nEXPLAIN ANALYZE, first page:")
  const plan = await db.explain((sql) => listUsersStatement(sql, { environmentId: env, after: undefined, limit: 100 }))
  console.log(plan)
  console.log("\nEXPLAIN ANALYZE, search:")
  console.log(
    await db.explain((sql) =>
      listUsersStatement(sql, { environmentId: env, search: "user123", after: undefined, limit: 25 }),
    ),
  )
  console.log(
    await db.explain((sql) =>
      listUsersStatement(sql, { environmentId: env, search: "ovelac", after: undefined, limit: 25 }),
    ),
  )

  const indexed = /Index Scan using users_env_page/.test(plan)
  const ok = firstPage.p50 < 20 && indexed
  console.log(
    `\n${ok ? "PASS" : "FAIL"}: p50 ${firstPage.p50.toFixed(2)} ms (target < 20 ms); first page ${indexed ? "uses" : "does NOT use"} index users_env_page`,
  )
  process.exitCode = ok ? 0 : 1
} finally {
  await db.close()
  await server.stop()
}
process.exit(process.exitCode ?? 0)
