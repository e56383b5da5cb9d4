import fc from "fast-check"
import { expect } from "vitest"
import { OAUTH_STATUS, PROBLEMS } from "../../src/http/problems.js"
import type { TestApp } from "../support/app.js"
import type { TestResponse } from "../support/http.js"
import { query } from "../login/support.js"

/**
 * What a refused request may change: only the failure bookkeeping the security model requires
 * to commit before the error is returned (docs/architecture.md, Security model): rate-limit
 * counters, OTP attempt counts, WebAuthn challenge consumption, `login.failed` events and
 * failure audit records. Everything else, in our tables and in graphile-worker's, must be
 * byte-for-byte unchanged. Each entry narrows one table to what may move in it.
 */
interface Compared {
  /** The row as compared (`x` is the row). */
  readonly row?: string
  /** Rows left out of the comparison. */
  readonly skip?: string
}

/** Event types a refusal emits by rule (spec: Events, login.failed). */
const FAILURE_EVENTS = "('login.failed')"

export const BOOKKEEPING: Readonly<Record<string, Compared>> = {
  // The counters are nothing but bookkeeping: every row may move.
  "public.rate_limit_counters": { skip: "true" },
  "public.caller_rate_counters": { skip: "true" },
  // A wrong code counts (failed_attempts) and the 5th kills the challenge (invalidated, finished);
  // any other change (a new challenge, a verified one, another code) is seen.
  "public.email_challenges": {
    row: `(to_jsonb(x) - 'failed_attempts' - 'finished_at') || jsonb_build_object('status', case when x.status = 'invalidated' then 'active' else x.status end)`,
  },
  // A verification attempt consumes its challenge, whatever its outcome.
  "public.webauthn_challenges": { row: `to_jsonb(x) - 'consumed_at'` },
  "public.event_outbox": { skip: `x.type in ${FAILURE_EVENTS}` },
  "public.audit_events": { skip: `x.result = 'failure'` },
  // The fan-out job of a failure event (only when a webhook subscribes to it).
  "graphile_worker._private_jobs": {
    skip: `x.task_id in (select id from graphile_worker._private_tasks where identifier = 'webhooks.fanout')
      and x.payload->>'eventId' in (select id from event_outbox where type in ${FAILURE_EVENTS})`,
  },
  // The first method call of a login transaction moves it `created` -> `interaction_started` and
  // commits even when the call is then refused (docs/decisions/login-and-tokens.md, "Login: transaction state
  // machine"): compared as if still `created`.
  "public.auth_transactions": {
    row: `(to_jsonb(x) - 'updated_at') || jsonb_build_object('status', case when x.status = 'interaction_started' then 'created' else x.status end)`,
  },
}

let tables: ReadonlyArray<string> | undefined

/** One checksum per table of our schema and graphile-worker's (every row as text, ordered), in one round trip. */
export const snapshot = async (app: TestApp): Promise<Record<string, string>> => {
  tables ??= (
    await query<{ name: string }>(
      app,
      "select schemaname || '.' || tablename as name from pg_tables where schemaname in ('public', 'graphile_worker') order by 1",
    )
  ).map((r) => r.name)
  const part = (t: string) => {
    const compared = BOOKKEEPING[t] ?? {}
    const row = `(${compared.row ?? "to_jsonb(x)"})::text`
    const [schema, table] = t.split(".")
    return (
      `select '${t}' as name, md5(coalesce(string_agg(${row}, '|' order by ${row}), '')) as sum from "${schema}"."${table}" x` +
      (compared.skip ? ` where not (${compared.skip})` : "")
    )
  }
  const rows = await query<{ name: string; sum: string }>(app, tables.map(part).join(" union all "))
  return Object.fromEntries(rows.map((r) => [r.name, r.sum]))
}

const PROBLEM_CODES = new Set(Object.values(PROBLEMS).map((p) => p.code))
const OAUTH_CODES = new Set(Object.keys(OAUTH_STATUS))

/** A refusal the spec defines: Problem Details with one of the table's codes, never a 5xx. */
export const expectProblem = (res: TestResponse, context: string) => {
  expect(res.status, `${context} -> ${res.status} ${res.text}`).toBeLessThan(500)
  expect(res.headers["content-type"], context).toBe("application/problem+json")
  expect(PROBLEM_CODES.has(res.json?.code), `${context}: code ${res.json?.code}`).toBe(true)
  expect(res.json.status, context).toBe(res.status)
}

/** An OAuth error body (RFC 6749 §5.2) with its registered status, never a 5xx. */
export const expectOAuthError = (res: TestResponse, context: string) => {
  expect(res.status, `${context} -> ${res.status} ${res.text}`).toBeLessThan(500)
  expect(OAUTH_CODES.has(res.json?.error), `${context}: error ${res.text}`).toBe(true)
  expect(res.status, context).toBe(OAUTH_STATUS[res.json.error as keyof typeof OAUTH_STATUS])
}

/** Checks the answer, and that a refusal left every non-bookkeeping table as it was. */
export const refusedChangesNothing = async (
  app: TestApp,
  before: Record<string, string>,
  res: TestResponse,
  context: string,
) => {
  if (res.status < 400) return
  const after = await snapshot(app)
  const changed = Object.keys(before).filter((t) => before[t] !== after[t])
  expect(changed, `${context} -> ${res.status} ${res.text} changed ${changed.join(", ")}`).toEqual([])
}

/** Strings that tend to break parsers: control characters, huge, unicode, SQL and path tricks. */
export const nastyString = fc.oneof(
  fc.string(),
  fc.string({ maxLength: 8 }).map((s) => `${s}\u0000${s}`),
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.constantFrom(
    "",
    " ",
    "\u0000",
    "\ud800",
    "a\udc00b",
    "null",
    "undefined",
    "0",
    "-1",
    "1e309",
    "NaN",
    "true",
    "'; drop table users; --",
    "../../etc/passwd",
    "%00",
    "%ZZ",
    "a".repeat(5000),
    "😀",
    "\uD800",
    "https://evil.example/cb",
    "http://localhost:1/x",
    "S256",
    "plain",
    "openid",
    "code",
    "authorization_code",
    "refresh_token",
    "rt_x.1.y",
    "eyJhbGciOiJub25lIn0.e30.",
  ),
)

/** A path segment holding any string: its UTF-8 bytes percent-encoded (lone surrogates become U+FFFD, as in any UTF-8 client). */
export const pathSegment = (value: string) =>
  [...Buffer.from(value, "utf8")]
    .map((byte) =>
      /[A-Za-z0-9_.~-]/.test(String.fromCharCode(byte))
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`,
    )
    .join("")

/** Any JSON, with numbers and strings that stress decoders. */
export const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 2, arbitrary: nastyString },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      1.5,
      -0,
      2 ** 53,
      -(2 ** 63),
      1e308,
      null,
      [],
      {},
      [null],
      { "": "" },
      { __proto__: { x: 1 } },
    ),
  },
)

/**
 * A JSON body for a route whose schema has `fields`: any JSON at all, an object over the
 * route's own field names with arbitrary values, or a valid base with one field broken or removed.
 */
export const bodyFor = (fields: ReadonlyArray<string>, base: Record<string, unknown> = {}): fc.Arbitrary<unknown> => {
  const keys = fields.length > 0 ? fields : ["x"]
  return fc.oneof(
    anyJson,
    fc.dictionary(fc.constantFrom(...keys, "unknown_field"), anyJson, { maxKeys: keys.length + 1 }),
    fc.tuple(fc.constantFrom(...keys), anyJson, fc.boolean()).map(([key, value, remove]) => {
      const body: Record<string, unknown> = { ...base }
      if (remove) delete body[key]
      else body[key] = value
      return body
    }),
  )
}

/** Form or query parameters: known names (repeated or not) with hostile values or valid ones. */
export const paramsFor = (names: ReadonlyArray<string>, valid: Record<string, ReadonlyArray<string>> = {}) => {
  const value = (name: string) =>
    fc.oneof(nastyString, ...(valid[name]?.length ? [fc.constantFrom(...valid[name]!)] : []))
  return fc
    .array(
      fc.constantFrom(...names, "unknown").chain((name) => value(name).map((v) => [name, v] as const)),
      { maxLength: 10 },
    )
    .map((pairs) => {
      const search = new URLSearchParams()
      for (const [k, v] of pairs) search.append(k, v)
      return search.toString()
    })
}

/** Modest run counts: the suite must stay fast on two cores; the seed is printed on failure. */
export const RUNS = Number(process.env["FUZZ_RUNS"] ?? 20)
