import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { parseConfig } from "../../src/platform/config.js"
import { ipv6Networks } from "../../src/platform/ip-prefix.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { createClient, type LoginClientInfo, publicApi, transactionBody, uniqueEmail } from "./support.js"

// docs/decisions/security-hardening.md: per-address limits count an IPv6 client per /64, but one customer site holds a /56
// (256 /64s) and an organisation a /48 (65,536): their /64s together are also limited, so one
// allocation cannot reach the per-client ceiling. The test client on 127.0.0.1 is the one
// trusted proxy (TRUST_PROXY=1); X-Forwarded-For names each caller's address.
let app: TestApp

beforeAll(async () => {
  app = await startApp({
    env: {
      TRUST_PROXY: "1",
      RATE_LIMIT_IP_PER_MINUTE: "5",
      RATE_LIMIT_IPV6_56_PER_MINUTE: "12",
      RATE_LIMIT_IPV6_48_PER_MINUTE: "20",
      RATE_LIMIT_CLIENT_PER_MINUTE: "100",
    },
  })
})
afterAll(async () => {
  await app?.close()
})

/** Each test gets its own Environment at the start of a fresh minute (counters are per Environment and fixed windows). */
const fresh = async () => {
  await app.advance(`${60_000 - (app.now() % 60_000) + 1_000} millis`)
  const b = await app.bootstrap()
  return { b, client: await createClient(app, b) }
}
const from = (ip: string) => ({ "x-forwarded-for": ip })
const create = (b: Bootstrapped, client: LoginClientInfo, ip: string) =>
  publicApi(app, b, "/auth/transactions", { body: transactionBody(client), headers: from(ip) })
/** An address in /64 number `n` (0-255) of the /56 `2001:db8:<site>:<nn>00::/56`. */
const inSite = (site: number, n: number, host = 1) =>
  `2001:db8:${site.toString(16)}:${(n + 0x100 * 0x11).toString(16)}::${host}`

describe("IPv6 aggregates: per /56 and per /48 besides the /64", () => {
  it("the networks of an address", () => {
    expect(ipv6Networks("2001:db8:1:2345:6789::1")).toEqual({
      net56: "2001:0db8:0001:2300::/56",
      net48: "2001:0db8:0001::/48",
    })
    expect(ipv6Networks("2001:db8:1::1")).toEqual({ net56: "2001:0db8:0001:0000::/56", net48: "2001:0db8:0001::/48" })
    expect(ipv6Networks("203.0.113.1")).toBeUndefined()
    expect(ipv6Networks("::ffff:203.0.113.1")).toBeUndefined()
    expect(ipv6Networks(undefined)).toBeUndefined()
    expect(inSite(1, 0)).toBe("2001:db8:1:1100::1")
    expect(inSite(1, 255)).toBe("2001:db8:1:11ff::1")
  })

  it("by default one /48 cannot reach the per-client ceiling (a /56 not even close)", () => {
    const r = parseConfig({ MASTER_KEY: Buffer.alloc(32, 1).toString("base64url") }).rateLimits
    expect(r.ipv6Network48PerMinute).toBeLessThan(r.clientPerMinute)
    expect(r.ipv6Network56PerMinute * 10).toBeLessThanOrEqual(r.clientPerMinute)
    expect([r.ipPerMinute, r.ipv6Network56PerMinute, r.ipv6Network48PerMinute, r.clientPerMinute]).toEqual([
      60, 600, 1200, 6000,
    ])
  })

  it("login transactions from many /64s of one /56 share the /56's budget; another /56 of the same /48 shares the /48's; another /48 and IPv4 are not affected", async () => {
    const { b, client } = await fresh()
    // 13 /64s of one /56, one request each (each far below its own /64 limit of 5).
    const statuses: Array<number> = []
    for (let n = 0; n < 13; n++) statuses.push((await create(b, client, inSite(1, n))).status)
    expect(statuses).toEqual([...Array(12).fill(201), 429])
    const refused = await create(b, client, inSite(1, 200))
    expect([refused.status, refused.json.code]).toEqual([429, "rate_limited"])
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0)
    // Another /56 of the same /48 (2001:db8:1:2200::/56): only 8 left of the /48's 20 (refused requests did not count).
    const second: Array<number> = []
    for (let n = 0; n < 9; n++)
      second.push((await create(b, client, `2001:db8:1:22${n.toString(16).padStart(2, "0")}::1`)).status)
    expect(second).toEqual([...Array(8).fill(201), 429])
    // Another /48 and an IPv4 address have their own budgets.
    expect((await create(b, client, inSite(2, 0))).status).toBe(201)
    expect((await create(b, client, "198.51.100.7")).status).toBe(201)
    // The next minute opens again.
    await app.advance("1 minute")
    expect((await create(b, client, inSite(1, 13))).status).toBe(201)
  })

  it("Email OTP starts from many /64s of one /56 are limited the same way", async () => {
    const { b, client } = await fresh()
    const created = await create(b, client, "198.51.100.8")
    expect(created.status, created.text).toBe(201)
    const txn = created.json.transaction_id as string
    const statuses: Array<number> = []
    for (let n = 0; n < 13; n++) {
      statuses.push(
        (
          await publicApi(app, b, `/auth/transactions/${txn}/email/start`, {
            body: { email: uniqueEmail("v6") },
            headers: from(inSite(3, n)),
          })
        ).status,
      )
    }
    expect(statuses).toEqual([...Array(12).fill(202), 429])
  })
})
