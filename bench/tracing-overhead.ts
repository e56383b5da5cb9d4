import { createHash, randomBytes } from "node:crypto"
import { mkdtempSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import { startEmbeddedPostgres } from "../src/platform/embedded-postgres.js"
import { send } from "../test/support/http.js"
import { bootstrap, type LoadResult, load, samplesOf, startServer } from "./support.js"

// What tracing costs per request, on hot paths, three servers over one database:
//   native    OTEL_EXPORTER_OTLP_ENDPOINT unset (the default): Effect's native tracer still
//             creates the spans of our Effect.withSpan calls and of each SQL statement, in memory
//   disabled  the same server with Effect's tracer switched off (bench/tracing-server.ts): no span at all
//   otlp      OTLP export on, to a local sink that accepts and drops the batches
// "native" vs "disabled" is the cost of the spans an unset endpoint still makes; "otlp" shows
// what switching export on costs. Rounds interleave the servers (the machine's other load
// drifts); the median of BENCH_ROUNDS (3) runs of BENCH_SECONDS (5) each is reported.
// Run: npx tsx bench/tracing-overhead.ts

const SECONDS = Number(process.env["BENCH_SECONDS"] ?? 5)
const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 3)
const CONNECTIONS = 16

// An OTLP/HTTP collector stand-in: counts the bytes it is sent and answers 200.
let exported = 0
const sink = createServer((req, res) => {
  req.on("data", (c: Buffer) => {
    exported += c.length
  })
  req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end("{}"))
})
await new Promise<void>((resolve) => sink.listen(0, "127.0.0.1", resolve))

const db = await startEmbeddedPostgres(mkdtempSync(join(tmpdir(), "authservice-bench-")), { persistent: false })
const masterKey = randomBytes(32).toString("base64url")
// One set of public hosts for the three servers (each listens on its own port; requests carry
// these Host headers), so a token issued by one is valid at the others.
const PUBLIC_PORT = 4000
const shared = {
  databaseUrl: db.url,
  env: {
    MASTER_KEY: masterKey,
    CANONICAL_ISSUER_HOST: `localhost:${PUBLIC_PORT}`,
    MANAGEMENT_HOST: `api.localhost:${PUBLIC_PORT}`,
    RATE_LIMIT_IP_PER_MINUTE: "100000000",
    RATE_LIMIT_CLIENT_PER_MINUTE: "100000000",
  },
}
const servers = {
  native: await startServer(shared),
  disabled: await startServer({ ...shared, entry: "bench/tracing-server.ts" }),
  otlp: await startServer({
    ...shared,
    env: { ...shared.env, OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(sink.address() as AddressInfo).port}` },
  }),
}
const env = bootstrap(servers.native.env)

/** node:http with a Host header (fetch ignores it, and the server dispatches by Host). */
const call = send

// A public client and an access token from a real code exchange (the login step itself marked
// done in SQL, as the tests do: the bench is about the requests after it).
const port = servers.native.port
const issuerHost = `localhost:${PUBLIC_PORT}`
const managementHost = `api.localhost:${PUBLIC_PORT}`
const interaction = env.interaction_domain
const redirectUri = "http://127.0.0.1:4999/callback"
const client = await call(port, managementHost, "/v1/clients", {
  method: "POST",
  headers: { authorization: `Bearer ${env.api_key}`, "content-type": "application/json" },
  body: JSON.stringify({
    environment_id: env.environment_id,
    client_type: "web_spa",
    name: "bench",
    token_endpoint_auth_method: "none",
    redirect_uris: [redirectUri],
  }),
})
const verifier = randomBytes(32).toString("base64url")
const transactionBody = JSON.stringify({
  client_id: client.json.id,
  redirect_uri: redirectUri,
  code_challenge: createHash("sha256").update(verifier).digest("base64url"),
  code_challenge_method: "S256",
  state: "s",
  nonce: "n",
  scope: "openid email",
})
const txn = await call(port, interaction, "/v1/auth/transactions", {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: transactionBody,
})
const sql = new pg.Client({ connectionString: db.url })
await sql.connect()
const user = (
  await call(port, managementHost, "/v1/users", {
    method: "POST",
    headers: { authorization: `Bearer ${env.api_key}`, "content-type": "application/json" },
    body: JSON.stringify({ environment_id: env.environment_id, email: "bench@example.com", email_verified: true }),
  })
).json
await sql.query(
  `update auth_transactions set status = 'authenticated', method = 'email_otp', user_id = $2, authenticated_at = now() where id = $1`,
  [txn.json.transaction_id, user.id],
)
await sql.end()
const completed = await call(port, interaction, `/v1/auth/transactions/${txn.json.transaction_id}/complete`, {
  method: "POST",
})
const code = completed.json.authorization_code as string
const tokens = await call(port, issuerHost, `/e/${env.environment_id}/oauth2/token`, {
  method: "POST",
  headers: { "content-type": "application/x-www-form-urlencoded" },
  body: new URLSearchParams({
    grant_type: "authorization_code",
    code,
    redirect_uri: redirectUri,
    code_verifier: verifier,
    client_id: client.json.id,
  }).toString(),
})
if (tokens.status !== 200) throw new Error(`no access token: ${JSON.stringify(tokens.json)}`)
const accessToken = tokens.json.access_token as string

const scenarios: Record<string, (p: number) => Promise<LoadResult>> = {
  // Token verification, live session state, claims: the resource servers' hot path.
  "GET userinfo": (p) =>
    load({
      url: `http://127.0.0.1:${p}/e/${env.environment_id}/oauth2/userinfo`,
      host: issuerHost,
      connections: CONNECTIONS,
      seconds: SECONDS,
      headers: { authorization: `Bearer ${accessToken}` },
    }),
  // API-key authentication and one page of SQL: a Management read.
  "GET /v1/users": (p) =>
    load({
      url: `http://127.0.0.1:${p}/v1/users?environment_id=${env.environment_id}&limit=20`,
      host: managementHost,
      connections: CONNECTIONS,
      seconds: SECONDS,
      headers: { authorization: `Bearer ${env.api_key}` },
    }),
  // Rate limits, an insert and its audit record in one transaction: a Public API write.
  "POST transaction": (p) =>
    load({
      url: `http://127.0.0.1:${p}/v1/auth/transactions`,
      host: interaction,
      connections: CONNECTIONS,
      seconds: SECONDS,
      method: "POST",
      headers: { "content-type": "application/json" },
      body: transactionBody,
    }),
}

const samples: Record<string, Record<string, Array<LoadResult>>> = {}
// A first run of everything (JIT, pools, caches) that is not measured.
for (const run of Object.values(scenarios)) for (const server of Object.values(servers)) await run(server.port)
for (let round = 0; round < ROUNDS; round++) {
  for (const [scenario, run] of Object.entries(scenarios)) {
    for (const [name, server] of Object.entries(servers))
      samplesOf(samples, scenario, name).push(await run(server.port))
  }
}
const median = (xs: Array<LoadResult>) => [...xs].sort((a, b) => a.rps - b.rps)[Math.floor(xs.length / 2)]!
console.log(
  `| scenario | disabled req/s | native (OTEL unset) req/s | native vs disabled | otlp req/s | otlp vs disabled | p50 ms disabled / native / otlp |`,
)
console.log("| --- | --- | --- | --- | --- | --- | --- |")
for (const [scenario, byServer] of Object.entries(samples)) {
  const [d, n, o] = [median(byServer["disabled"]!), median(byServer["native"]!), median(byServer["otlp"]!)]
  const pct = (x: LoadResult) => `${(((x.rps - d.rps) / d.rps) * 100).toFixed(1)}%`
  console.log(
    `| ${scenario} | ${Math.round(d.rps)} | ${Math.round(n.rps)} | ${pct(n)} | ${Math.round(o.rps)} | ${pct(o)} | ${d.p50} / ${n.p50} / ${o.p50} |`,
  )
  for (const [name, xs] of Object.entries(byServer))
    console.log(
      `  ${scenario} ${name}: ${xs.map((x) => `${Math.round(x.rps)}${x.non2xx || x.errors ? ` (non-2xx ${x.non2xx}, errors ${x.errors})` : ""}`).join(", ")}`,
    )
}
console.log(
  `OTLP bytes received by the sink: ${exported}; load average at end: ${loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")}`,
)
for (const server of Object.values(servers)) await server.stop()
await db.stop()
sink.close()
process.exit(0)
