// Benchmark: the code written here by hand against the maintained library that does the same job
// (issue 23; decisions: foundation.md, "Maintained libraries or our own code"). Side by side in
// one run, alternating, so a busy machine slows both alike.
// Run: nice npx tsx bench/hand-written-vs-libraries.ts
// The libraries compared are devDependencies (proxy-addr, iron-webcrypto, hono), installed by `npm install`.
//
// 1. Client address behind proxies: clientIp (src/platform/trust-proxy.ts) against proxy-addr,
//    Express's: time per call, and where the two answers differ on the same inputs.
// 2. Sealing: crypto.seal/open (AES-256-GCM under an HKDF key, src/platform/crypto.ts) against
//    iron-webcrypto (AES-256-CBC + HMAC-SHA256, two PBKDF2 derivations per seal).
// 3. CSRF: checkCookieWrite (src/management/auth/csrf.ts, the Dashboard cookie's rule) against
//    Hono's csrf middleware (Origin or Sec-Fetch-Site), on the requests of
//    test/operator/dashboard-sessions.test.ts: which each lets through.
import { createRequire } from "node:module"
import { performance } from "node:perf_hooks"
import { Effect, Exit } from "effect"
import type { HttpServerRequest } from "effect/http"
import { Hono } from "hono"
import { csrf } from "hono/csrf"
import * as Iron from "iron-webcrypto"
import { checkCookieWrite } from "../src/management/auth/csrf.js"
import type { AppConfig } from "../src/platform/config.js"
import { makeCrypto } from "../src/platform/crypto.js"
import { clientIp, parseTrustProxy, type TrustProxy } from "../src/platform/trust-proxy.js"

const require = createRequire(import.meta.url)
type ProxyAddr = ((req: unknown, trust: unknown) => string) & { compile: (v: Array<string>) => unknown }
const proxyaddr = require("proxy-addr") as ProxyAddr

const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 5)
const CALLS = Number(process.env["BENCH_CALLS"] ?? 200_000)
const SEALS = Number(process.env["BENCH_SEALS"] ?? 20_000)

/** Median microseconds per call over ROUNDS rounds of `n` calls, the two candidates alternating. */
const sideBySide = async (label: string, n: number, candidates: Record<string, () => unknown | Promise<unknown>>) => {
  const times: Record<string, Array<number>> = Object.fromEntries(Object.keys(candidates).map((k) => [k, []]))
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, run] of Object.entries(candidates)) {
      const start = performance.now()
      for (let i = 0; i < n; i++) {
        const r = run()
        if (r instanceof Promise) await r
      }
      times[name]!.push(((performance.now() - start) * 1000) / n)
    }
  }
  const median = (xs: Array<number>) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  console.log(`\n${label} (median of ${ROUNDS} rounds x ${n} calls)`)
  for (const [name, xs] of Object.entries(times)) console.log(`  ${name.padEnd(34)} ${median(xs).toFixed(3)} us/call`)
}

// --- 1. Client address --------------------------------------------------------------------------

const cidrs = "10.0.0.0/8,fd00::/8"
const trustCidrs = parseTrustProxy(cidrs) as TrustProxy
const trustHops = parseTrustProxy("2") as TrustProxy
const libCidrs = proxyaddr.compile(cidrs.split(","))
const libHops = (_addr: string, i: number) => i < 2
const request = (peer: string, xff: string | undefined) => ({
  headers: xff === undefined ? {} : { "x-forwarded-for": xff },
  socket: { remoteAddress: peer },
})

/** Inputs a deployment sees: [socket peer, X-Forwarded-For]. */
const cases: Array<[string, string | undefined]> = [
  ["10.0.0.1", "203.0.113.7"],
  ["10.0.0.1", "198.51.100.9, 203.0.113.7, 10.1.2.3"],
  ["::ffff:10.0.0.1", "203.0.113.7"],
  ["10.0.0.1", "203.0.113.7:51234"],
  ["10.0.0.1", "[2001:db8::1]:443"],
  ["10.0.0.1", "2001:DB8::1"],
  ["10.0.0.1", "::ffff:203.0.113.7"],
  ["10.0.0.1", "203.0.113.7, unknown"],
  ["10.0.0.1", "203.0.113.7, not-an-ip"],
  ["fd00::5", "2001:db8::1"],
  ["192.0.2.1", "203.0.113.7"],
  ["10.0.0.1", undefined],
]

console.log("Client address: where clientIp and proxy-addr answer differently (same peer, same X-Forwarded-For)")
for (const [mode, ours, lib] of [
  ["TRUST_PROXY=10.0.0.0/8,fd00::/8", trustCidrs, libCidrs],
  ["TRUST_PROXY=2", trustHops, libHops],
] as const) {
  for (const [peer, xff] of cases) {
    const a = clientIp(ours, peer, xff)
    const b = proxyaddr(request(peer, xff), lib)
    if (a !== b) console.log(`  ${mode}  peer ${peer}  XFF ${JSON.stringify(xff)}:  clientIp ${a}  proxy-addr ${b}`)
  }
}

const chain = "198.51.100.9, 203.0.113.7, 10.1.2.3"
const req = request("10.0.0.1", chain)
await sideBySide("Client address, TRUST_PROXY as CIDRs, a three-entry X-Forwarded-For", CALLS, {
  "clientIp (ours)": () => clientIp(trustCidrs, "10.0.0.1", chain),
  "proxy-addr 2.0.8": () => proxyaddr(req, libCidrs),
})
await sideBySide("Client address, TRUST_PROXY as a hop count (2)", CALLS, {
  "clientIp (ours)": () => clientIp(trustHops, "10.0.0.1", chain),
  "proxy-addr 2.0.8": () => proxyaddr(req, libHops),
})

// --- 2. Sealing ---------------------------------------------------------------------------------

const crypto = makeCrypto({ current: new Uint8Array(32).fill(7) })
const ctx = { purpose: "bench", table: "bench", rowId: "row_1" }
const payload = JSON.stringify({ sub: "usr_01HZX3K9", sid: "ses_01HZX3KA", amr: ["otp"], exp: 1_900_000_000 })
const sealedOurs = Effect.runSync(crypto.seal(ctx, payload))
console.log(`\nSealed size of a ${payload.length}-byte payload: ours ${sealedOurs.length} characters`)
const password = "7".repeat(64)
const sealedIron = await Iron.seal(payload, password, Iron.defaults)
console.log(`                                                   iron-webcrypto ${sealedIron.length} characters`)
await sideBySide("Seal", SEALS, {
  "crypto.seal (AES-256-GCM, ours)": () => Effect.runSync(crypto.seal(ctx, payload)),
  "iron-webcrypto 2.0.0 seal": () => Iron.seal(payload, password, Iron.defaults),
})
await sideBySide("Open", SEALS, {
  "crypto.open (ours)": () => Effect.runSync(crypto.open(ctx, sealedOurs)),
  "iron-webcrypto 2.0.0 unseal": () => Iron.unseal(sealedIron, password, Iron.defaults),
})

// --- 3. CSRF ------------------------------------------------------------------------------------

const DASHBOARD = "https://dashboard.example"
const hono = new Hono().use(csrf({ origin: [DASHBOARD] })).all("*", (c) => c.text("ok"))
const csrfCases: Array<[string, string, Record<string, string>]> = [
  ["POST", "JSON from a foreign Origin", { origin: "https://evil.example", "content-type": "application/json" }],
  ["POST", "JSON without Origin", { "content-type": "application/json" }],
  ["POST", "Origin null, form body", { origin: "null", "content-type": "application/x-www-form-urlencoded" }],
  ["POST", "listed Origin, text/plain body", { origin: DASHBOARD, "content-type": "text/plain" }],
  [
    "POST",
    "no Origin, Sec-Fetch-Site same-origin, form",
    { "sec-fetch-site": "same-origin", "content-type": "application/x-www-form-urlencoded" },
  ],
  ["POST", "listed Origin, JSON", { origin: DASHBOARD, "content-type": "application/json" }],
  ["POST", "bodiless, foreign Origin", { origin: "https://evil.example" }],
  ["GET", "read without Origin", {}],
]
console.log(
  "\nCSRF: which cookie writes each lets through (ours: checkCookieWrite; Hono: csrf({ origin: [DASHBOARD] }))",
)
for (const [method, label, headers] of csrfCases) {
  const body = headers["content-type"] === undefined || method === "GET" ? undefined : "{}"
  const withLength = body === undefined ? headers : { ...headers, "content-length": String(body.length) }
  const ours = Effect.runSyncExit(
    checkCookieWrite(
      { method, headers: withLength } as unknown as HttpServerRequest.HttpServerRequest,
      {
        dashboardOrigins: [DASHBOARD],
      } as unknown as AppConfig,
    ),
  )
  const theirs = await hono.request("http://dashboard.example/x", { method, headers, body: body ?? null })
  const verdict = (ok: boolean) => (ok ? "allowed" : "403")
  console.log(
    `  ${label.padEnd(44)} ours ${verdict(Exit.isSuccess(ours)).padEnd(8)} Hono ${verdict(theirs.status === 200)}${theirs.status === 403 ? ` (body ${JSON.stringify(await theirs.text())}, ${theirs.headers.get("content-type")})` : ""}`,
  )
}
