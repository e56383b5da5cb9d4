// The floor of a durable refresh on this machine: the least a server must do to rotate a refresh
// token as our schema records it, with nothing of ours around it. One node:http server, one
// node-postgres pool of 10 (ours has 10), named prepared statements with typed parameters, as our
// driver sends them (planned on every call these statements cost Postgres about three times as
// much, and with node-postgres's untyped parameters a tenth to a third more:
// docs/decisions/performance.md), and per request exactly our two round trips: the read of the client, family, user, session and presented generation
// (src/oidc/refresh/repo.ts readClientAndFamily), then the rotation as one compare-and-set
// statement that adds the next generation's token row, renews the session (at most once a minute) and appends the
// login.succeeded event to the outbox (rotateFamily). In between, the same work on the token
// side as ours: the client secret and the generation's secret checked by SHA-256, both tokens
// signed (ES256) and the response body built by our own functions, a new secret drawn, the
// response sealed with AES-256-GCM for the grace window.
//
// Left out, so the floor is below any real server: rate limits, request logs, metrics, traces,
// the grace-window replay and reuse detection (a refused request is a bare 400), the event's
// schema validation and fan-out check, the monthly-active-user write (the bench's users are
// counted already). Started by bench/oidc-vs-oidc-provider.ts (BENCH_FLOOR=1); not a server.
//
// Run: tsx bench/refresh-floor.ts <port> <database url>
import { createCipheriv, createHash, generateKeyPairSync, randomBytes, timingSafeEqual } from "node:crypto"
import { createServer, type IncomingMessage } from "node:http"
import pg from "pg"
import { accessTokenAudience } from "../src/oidc/tokens/mint.js"
import { scopedUserClaims, unixSeconds } from "../src/oidc/tokens/claims.js"
import { signEs256 } from "../src/oidc/tokens/jws.js"
import { formatRefreshToken, parseRefreshToken } from "../src/oidc/refresh/token-format.js"
import { tokenResponseBody } from "../src/oidc/token/response.js"

const [portText, databaseUrl] = process.argv.slice(2)
const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 })
const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" })
const sealKey = randomBytes(32)
const KID = "floor"
const TTL_S = 300
const GRACE_MS = 5_000
const IDLE_MS = 30 * 24 * 3600_000

const READ = `select cl.id as client_row_id, cl.workspace_id as client_workspace_id, cl.secret_hash as client_secret_hash,
    cl.status as client_status, f.id, f.client_id, f.user_id, f.session_id, f.scopes, f.resources, f.auth_time, f.generation,
    f.absolute_expires_at, f.idle_expires_at, f.revoked_at, t.secret_hash as presented_hash, u.status as user_status,
    u.security_version as user_security_version, u.email, u.email_verified, u.name, u.locale, u.updated_at as user_updated_at,
    s.revoked_at as session_revoked_at, s.idle_expires_at as session_idle_expires_at,
    s.absolute_expires_at as session_absolute_expires_at, s.security_version as session_security_version,
    exists (select 1 from mau_users m where m.environment_id = f.environment_id and m.billing_month = $5::text
      and m.user_id = f.user_id) as mau_counted
  from clients cl
    left join refresh_families f on f.environment_id = cl.environment_id and f.id = $3::text
    left join users u on u.environment_id = f.environment_id and u.id = f.user_id
    left join login_sessions s on s.environment_id = f.environment_id and s.id = f.session_id
    left join refresh_tokens t on t.family_id = f.id and t.generation = $4::int
  where cl.environment_id = $1::text and cl.id = $2::text and cl.deleted_at is null`

/**
 * FLOOR_WITHOUT=token,session,event (any of them): a rotation without that write, to measure what
 * each costs Postgres (measurement only: without the token row the presented secret is not checked).
 */
const WITHOUT = new Set((process.env["FLOOR_WITHOUT"] ?? "").split(","))
const part = (name: string, write: string, unused: string) => `${name} as (${WITHOUT.has(name) ? unused : write})`

const ROTATE = `with family as (
    update refresh_families set generation = $3::int, last_used_at = $4::timestamptz, idle_expires_at = $5::timestamptz, grace_generation = $6::int,
      grace_response_sealed = $7::text, grace_until = $8::timestamptz
    where environment_id = $1::text and id = $2::text and generation = $6::int and revoked_at is null
    returning id
  ), ${part(
    "token",
    `insert into refresh_tokens (family_id, generation, environment_id, secret_hash, issued_at)
    select id, $3::int, $1::text, $9::text, $4::timestamptz from family`,
    "select $9::text",
  )}, ${part(
    "session",
    `update login_sessions set last_active_at = $4::timestamptz, idle_expires_at = greatest(idle_expires_at, $15::timestamptz),
      absolute_expires_at = greatest(absolute_expires_at, $10::timestamptz)
    where environment_id = $1::text and id = $11::text and exists (select 1 from family)
      and (idle_expires_at < $5::timestamptz or absolute_expires_at < $10::timestamptz)`,
    "select $10::timestamptz, $11::text, $15::timestamptz",
  )}, ${part(
    "event",
    `insert into event_outbox (id, workspace_id, environment_id, type, envelope, occurred_at)
    select $12::text, $13::text, $1::text, 'login.succeeded', $14::jsonb, $4::timestamptz from family limit 1
    returning id`,
    "select $12::text as id, $13::text, $14::jsonb from family where false",
  )}
  select (select count(*) from family)::int as rotated`

const sha256Hex = (text: string) => createHash("sha256").update(text).digest("hex")
const sameHex = (a: string, b: string | null) =>
  b !== null && a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b))
const eventId = () => `evt_${randomBytes(20).toString("hex").slice(0, 32)}`

const seal = (context: string, plaintext: string) => {
  const iv = randomBytes(12)
  const cipher = createCipheriv("aes-256-gcm", sealKey, iv)
  cipher.setAAD(Buffer.from(context))
  const sealed = Buffer.concat([iv, cipher.update(plaintext, "utf8"), cipher.final(), cipher.getAuthTag()])
  return sealed.toString("base64url")
}

const refused = (status: number, error: string) => [status, JSON.stringify({ error })] as const

async function refresh(req: IncomingMessage, text: string): Promise<readonly [number, string]> {
  const environmentId = /^\/e\/([^/]+)\/oauth2\/token$/.exec(req.url ?? "")?.[1]
  const params = new URLSearchParams(text)
  const basic = Buffer.from((req.headers.authorization ?? "").replace(/^Basic /, ""), "base64").toString()
  const [clientId, secret] = basic.split(":")
  const token = parseRefreshToken(params.get("refresh_token") ?? "")
  if (!environmentId || params.get("grant_type") !== "refresh_token" || !clientId || !secret || !token)
    return refused(400, "invalid_request")
  const nowMs = Date.now()
  const now = new Date(nowMs)
  const month = now.toISOString().slice(0, 7)
  const read = await pool.query({
    name: "floor-read",
    text: READ,
    values: [environmentId, clientId, token.familyId, token.generation, month],
  })
  const row = read.rows[0]
  if (row?.client_status !== "active" || !sameHex(sha256Hex(secret), row.client_secret_hash))
    return refused(401, "invalid_client")
  if (
    row.id === null ||
    row.client_id !== clientId ||
    (!WITHOUT.has("token") && !sameHex(sha256Hex(token.secret), row.presented_hash))
  )
    return refused(400, "invalid_grant")
  if (
    row.user_status !== "active" ||
    row.revoked_at !== null ||
    row.generation !== token.generation ||
    row.idle_expires_at.getTime() <= nowMs ||
    row.session_revoked_at !== null ||
    row.session_absolute_expires_at.getTime() <= nowMs ||
    row.session_security_version !== row.user_security_version
  )
    return refused(400, "invalid_grant")

  const iat = unixSeconds(nowMs)
  const scopes: Array<string> = row.scopes
  const accessToken = signEs256(
    { alg: "ES256", typ: "at+jwt", kid: KID },
    {
      iss: `http://${req.headers.host}/e/${environmentId}`,
      sub: row.user_id,
      aud: accessTokenAudience(`http://${req.headers.host}/e/${environmentId}`, row.resources),
      exp: iat + TTL_S,
      iat,
      jti: randomBytes(16).toString("base64url"),
      sid: row.session_id,
      client_id: clientId,
      scope: scopes.join(" "),
      amr: ["refresh_token"],
      acr: "urn:example-auth:loa:basic",
      auth_time: unixSeconds(row.auth_time),
      sv: row.user_security_version,
    },
    privateKey,
  )
  const idToken = signEs256(
    { alg: "ES256", typ: "JWT", kid: KID },
    {
      iss: `http://${req.headers.host}/e/${environmentId}`,
      sub: row.user_id,
      aud: clientId,
      exp: iat + TTL_S,
      iat,
      auth_time: unixSeconds(row.auth_time),
      amr: ["refresh_token"],
      acr: "urn:example-auth:loa:basic",
      sid: row.session_id,
      ...scopedUserClaims(scopes, {
        name: row.name,
        locale: row.locale,
        updated_at: row.user_updated_at,
        email: row.email,
        email_verified: row.email_verified,
      }),
    },
    privateKey,
  )
  const nextGeneration = row.generation + 1
  const nextSecret = randomBytes(32).toString("base64url")
  const body = JSON.stringify(
    tokenResponseBody({
      accessToken,
      idToken,
      refreshToken: formatRefreshToken(row.id, nextGeneration, nextSecret),
      scopes,
    }),
  )
  const id = eventId()
  const envelope = JSON.stringify({
    id,
    type: "login.succeeded",
    occurred_at: now.toISOString(),
    workspace_id: row.client_workspace_id,
    environment_id: environmentId,
    actor: { type: "end_user", id: row.user_id },
    data: { user_id: row.user_id, session_id: row.session_id, method: "refresh_token", client_id: clientId },
  })
  const idleExpiresAt = Math.min(nowMs + IDLE_MS, row.absolute_expires_at.getTime())
  const rotated = await pool.query({
    name: "floor-rotate",
    text: ROTATE,
    values: [
      environmentId,
      row.id,
      nextGeneration,
      now,
      new Date(idleExpiresAt),
      row.generation,
      seal(`refresh-grace.${row.id}.${row.generation}`, body),
      new Date(nowMs + GRACE_MS),
      sha256Hex(nextSecret),
      row.absolute_expires_at,
      row.session_id,
      id,
      row.client_workspace_id,
      envelope,
      new Date(Math.ceil(idleExpiresAt / 60_000) * 60_000),
    ],
  })
  if (rotated.rows[0]?.rotated !== 1) return refused(400, "invalid_grant")
  return [200, body]
}

createServer((req, res) => {
  if (req.method !== "POST") {
    res.writeHead(200, { "content-type": "text/plain" })
    res.end("floor")
    return
  }
  const chunks: Array<Buffer> = []
  req.on("data", (chunk: Buffer) => chunks.push(chunk))
  req.on("end", () => {
    refresh(req, Buffer.concat(chunks).toString("utf8")).then(
      ([status, body]) => {
        res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store", pragma: "no-cache" })
        res.end(body)
      },
      (error: unknown) => {
        res.writeHead(500, { "content-type": "text/plain" })
        res.end(String(error))
      },
    )
  })
}).listen(Number(portText), "127.0.0.1")
