import { createServer, type Server } from "node:https"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { inject } from "vitest"
import { ProviderFetchError, providerFetch } from "../../src/social/fetch.js"

// The provider fetch (src/social/fetch.ts): the webhook SSRF policy on outbound provider
// calls, and the test CA reaching worker processes through NODE_EXTRA_CA_CERTS.

let server: Server
let port = 0
const hits: Array<string> = []
const traceparents: Array<string | undefined> = []

beforeAll(async () => {
  const tls = inject("testTls")
  server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    hits.push(`${req.headers.host} ${req.url}`)
    traceparents.push(req.headers["traceparent"]?.toString())
    if (req.url === "/redirect") return void res.writeHead(302, { location: "https://127.0.0.1/elsewhere" }).end()
    if (req.url === "/big") return void res.writeHead(200).end(Buffer.alloc(2048, 97))
    if (req.url === "/slow") return // never answers
    res
      .writeHead(200, { "content-type": "application/json" })
      .end(JSON.stringify({ host: req.headers.host, method: req.method }))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  port = (server.address() as AddressInfo).port
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

const get = (f: ReturnType<typeof providerFetch>, url: string) =>
  f(url, { method: "GET", headers: {}, body: undefined, redirect: "manual" })

describe("provider fetch", () => {
  it("trusts the test CA through NODE_EXTRA_CA_CERTS, set by the global setup before the workers started", async () => {
    expect(process.env["NODE_EXTRA_CA_CERTS"]).toBe(inject("testTls").caFile)
    const f = providerFetch({ allowPrivateTargets: true, hosts: new Map() })
    const res = await get(f, `https://localhost:${port}/ok`)
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ host: `localhost:${port}`, method: "GET" })
  })

  it("sends the traceparent of the span making the calls (when spans are recorded), and none otherwise", async () => {
    const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    await get(
      providerFetch({ allowPrivateTargets: true, hosts: new Map(), traceparent }),
      `https://localhost:${port}/ok`,
    )
    expect(traceparents.at(-1)).toBe(traceparent)
    await get(providerFetch({ allowPrivateTargets: true, hosts: new Map() }), `https://localhost:${port}/ok`)
    expect(traceparents.at(-1)).toBeUndefined()
  })

  it("SOCIAL_PROVIDER_HOSTS moves only the socket: TLS name and Host stay the provider's", async () => {
    const f = providerFetch({
      allowPrivateTargets: true,
      hosts: new Map([["accounts.google.com", { address: "127.0.0.1", port }]]),
    })
    const res = await get(f, "https://accounts.google.com/.well-known/openid-configuration")
    expect(await res.json()).toEqual({ host: "accounts.google.com", method: "GET" })
  })

  it("refuses loopback (literal, mapped or resolved) unless WEBHOOK_ALLOW_PRIVATE_TARGETS", async () => {
    const before = hits.length
    const strict = providerFetch({
      allowPrivateTargets: false,
      hosts: new Map([["accounts.google.com", { address: "127.0.0.1", port }]]),
    })
    await expect(get(strict, `https://127.0.0.1:${port}/ok`)).rejects.toMatchObject({ reason: "blocked_address" })
    await expect(get(strict, "https://accounts.google.com/ok")).rejects.toMatchObject({ reason: "blocked_address" })
    await expect(get(strict, `https://localhost:${port}/ok`)).rejects.toMatchObject({ reason: "blocked_address" })
    expect(hits.length).toBe(before)
  })

  it("refuses http, never follows redirects, bounds the body and the time", async () => {
    const f = providerFetch({ allowPrivateTargets: true, hosts: new Map(), maxBytes: 1024, timeoutMs: 300 })
    await expect(get(f, `http://127.0.0.1:${port}/ok`)).rejects.toBeInstanceOf(ProviderFetchError)
    const redirected = await get(f, `https://127.0.0.1:${port}/redirect`)
    expect(redirected.status).toBe(302)
    expect(hits.filter((h) => h.endsWith("/elsewhere"))).toEqual([])
    await expect(get(f, `https://127.0.0.1:${port}/big`)).rejects.toMatchObject({ reason: "too_large" })
    await expect(get(f, `https://127.0.0.1:${port}/slow`)).rejects.toMatchObject({ reason: "timeout" })
  })
})
