import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { guardedLookup, type Resolver } from "../../src/platform/outbound/guarded-lookup.js"
import { makeSender, type SenderOptions, type SendOutcome } from "../../src/webhooks/delivery/send.js"

// docs/architecture.md, Security model: SSRF checks at connect time (a validating `lookup`, so DNS
// rebinding cannot pass), redirects never followed, response bodies and total time bounded.

let server: Server
let port: number
const hits: Array<string> = []
let closedSockets = 0

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    hits.push(req.url ?? "")
    req.resume()
    req.on("end", () => {
      if (req.url === "/redirect") {
        res.writeHead(302, { location: "/target" }).end()
      } else if (req.url === "/huge") {
        res.writeHead(200, { "content-type": "application/octet-stream" })
        const chunk = Buffer.alloc(64 * 1024, 120)
        const pump = () => {
          // Stream until the client hangs up (10 MiB at most).
          for (let i = 0; i < 160 && !res.destroyed; i++) if (!res.write(chunk)) return res.once("drain", pump)
          res.end()
        }
        res.on("close", () => {
          closedSockets++
        })
        pump()
      } else if (req.url === "/reset") {
        req.socket.resetAndDestroy() // TCP RST before any answer
      } else if (req.url === "/slow") {
        setTimeout(() => res.writeHead(204).end(), 200)
      } else if (req.url === "/silent") {
        // never answers
      } else if (req.url === "/many-headers") {
        // 40 headers (one a cookie, one very long): the log keeps 32, no cookie, values cut.
        const headers: Record<string, string> = { "set-cookie": "sid=secret", "x-long": "v".repeat(2000) }
        for (let i = 0; i < 38; i++) headers[`x-h${String(i).padStart(2, "0")}`] = String(i)
        res.writeHead(503, headers).end("busy")
      } else if (req.url === "/exact" || req.url === "/over") {
        res.writeHead(200).end("y".repeat(req.url === "/exact" ? 4096 : 4097))
      } else if (req.url === "/nul") {
        res.writeHead(500).end(Buffer.from([0x61, 0x00, 0xff, 0x62]))
      } else if (req.url === "/trickle") {
        res.writeHead(200)
        res.write("x") // headers and one byte, then nothing
      } else {
        res.writeHead(204).end()
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  port = (server.address() as AddressInfo).port
})
afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

const send = async (options: Partial<SenderOptions>, url: string): Promise<SendOutcome> => {
  const { sender, close } = makeSender({
    timeoutMs: 2_000,
    maxResponseBytes: 64 * 1024,
    allowPrivateTargets: true,
    ...options,
  })
  try {
    return await Effect.runPromise(sender.send({ url, headers: { "content-type": "application/json" }, body: "{}" }))
  } finally {
    close()
  }
}

const resolverFor =
  (answers: Record<string, ReadonlyArray<string>>): Resolver =>
  (hostname, callback) => {
    const list = answers[hostname]
    if (!list) return callback(Object.assign(new Error("not found"), { code: "ENOTFOUND" }), [])
    callback(
      null,
      list.map((address) => ({ address, family: address.includes(":") ? 6 : 4 })),
    )
  }

describe("connect-time address check", () => {
  it("a name that resolves to loopback is refused before any connection (DNS rebinding)", async () => {
    const before = hits.length
    const outcome = await send(
      { allowPrivateTargets: false, resolver: resolverFor({ "rebind.example": ["127.0.0.1"] }) },
      `https://rebind.example:${port}/hook`,
    )
    expect(outcome).toMatchObject({ kind: "failure", reason: "blocked_address" })
    expect(hits.length).toBe(before)
  })

  it("one blocked address among public ones is enough to refuse", async () => {
    const outcome = await send(
      { allowPrivateTargets: false, resolver: resolverFor({ "mixed.example": ["93.184.216.34", "10.0.0.7"] }) },
      `https://mixed.example:${port}/hook`,
    )
    expect(outcome).toMatchObject({ kind: "failure", reason: "blocked_address" })
  })

  it("IPv6 answers mapping to blocked IPv4 are refused", async () => {
    const outcome = await send(
      { allowPrivateTargets: false, resolver: resolverFor({ "v6.example": ["::ffff:127.0.0.1"] }) },
      `https://v6.example:${port}/hook`,
    )
    expect(outcome).toMatchObject({ kind: "failure", reason: "blocked_address" })
  })

  it("IP-literal hosts (which skip DNS) and http are refused without private targets", async () => {
    expect(await send({ allowPrivateTargets: false }, `https://127.0.0.1:${port}/hook`)).toMatchObject({
      kind: "failure",
      reason: "blocked_address",
    })
    expect(await send({ allowPrivateTargets: false }, `https://0x7f.1:${port}/hook`)).toMatchObject({
      kind: "failure",
      reason: "blocked_address",
    })
    expect(await send({ allowPrivateTargets: false }, `http://public.example:${port}/hook`)).toMatchObject({
      kind: "failure",
      reason: "blocked_address",
    })
  })

  it("the lookup hands a public answer to the socket unchanged", async () => {
    const lookup = guardedLookup(
      resolverFor({ "public.example": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"] }),
    )
    const one = await new Promise<[string, number]>((resolve, reject) =>
      lookup("public.example", { family: 4 }, (err, address, family) =>
        err ? reject(err) : resolve([address as string, family!]),
      ),
    )
    expect(one).toEqual(["93.184.216.34", 4])
    const all = await new Promise<unknown>((resolve, reject) =>
      lookup("public.example", { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))),
    )
    expect(all).toEqual([
      { address: "93.184.216.34", family: 4 },
      { address: "2606:2800:220:1:248:1893:25c8:1946", family: 6 },
    ])
  })

  it("an unresolvable name is a connection failure (retried), not a crash", async () => {
    const outcome = await send(
      { allowPrivateTargets: false, resolver: resolverFor({}) },
      "https://nowhere.example/hook",
    )
    expect(outcome).toMatchObject({ kind: "failure", reason: "connection_failed" })
  })
})

describe("bounded sends", () => {
  it("a redirect is not followed: the 302 is the answer and its target is never requested", async () => {
    const before = hits.length
    expect(await send({}, `http://127.0.0.1:${port}/redirect`)).toMatchObject({ kind: "response", status: 302 })
    expect(hits.slice(before)).toEqual(["/redirect"])
  })

  it("a receiver that never answers is a time-out", async () => {
    expect(await send({ timeoutMs: 300 }, `http://127.0.0.1:${port}/silent`)).toMatchObject({
      kind: "failure",
      reason: "timeout",
    })
  })

  it("a receiver that answers but never finishes its body keeps its status when time is up", async () => {
    expect(await send({ timeoutMs: 300 }, `http://127.0.0.1:${port}/trickle`)).toMatchObject({
      kind: "response",
      status: 200,
    })
  })

  it("a huge response body is not read past the limit (the connection is dropped)", async () => {
    const closedBefore = closedSockets
    expect(await send({ maxResponseBytes: 128 * 1024 }, `http://127.0.0.1:${port}/huge`)).toMatchObject({
      kind: "response",
      status: 200,
    })
    await expect.poll(() => closedSockets, { timeout: 2_000 }).toBeGreaterThan(closedBefore)
  })

  it("a receiver that resets the connection is a connection failure (retried), and the sender stays usable", async () => {
    expect(await send({}, `http://127.0.0.1:${port}/reset`)).toMatchObject({
      kind: "failure",
      reason: "connection_failed",
    })
    expect(await send({}, `http://127.0.0.1:${port}/ok`)).toMatchObject({ kind: "response", status: 204 })
  })

  it("a slow receiver within the time limit is a response, with its duration", async () => {
    const outcome = await send({ timeoutMs: 2_000 }, `http://127.0.0.1:${port}/slow`)
    expect(outcome).toMatchObject({ kind: "response", status: 204 })
    expect(outcome.durationMs).toBeGreaterThanOrEqual(150)
  })

  it("a refused connection is a connection failure", async () => {
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve))
    const freePort = (closed.address() as AddressInfo).port
    await new Promise((resolve) => closed.close(resolve))
    expect(await send({}, `http://127.0.0.1:${freePort}/`)).toMatchObject({
      kind: "failure",
      reason: "connection_failed",
    })
  })
})

describe("what a send keeps of the answer, for the delivery log (decisions: Attempt request and response)", () => {
  it("the body: up to 4 KiB whole, truncated past it; NUL and undecodable bytes as U+FFFD", async () => {
    expect(await send({}, `http://127.0.0.1:${port}/exact`)).toMatchObject({
      kind: "response",
      status: 200,
      body: "y".repeat(4096),
      bodyTruncated: false,
    })
    expect(await send({}, `http://127.0.0.1:${port}/over`)).toMatchObject({
      body: "y".repeat(4096),
      bodyTruncated: true,
    })
    expect(await send({}, `http://127.0.0.1:${port}/nul`)).toMatchObject({ status: 500, body: "a\uFFFD\uFFFDb" })
    // Past the 64 KiB read limit the connection is dropped: 4 KiB kept, truncated.
    const huge = await send({}, `http://127.0.0.1:${port}/huge`)
    expect(huge).toMatchObject({ kind: "response", status: 200, bodyTruncated: true })
    expect(huge.kind === "response" && huge.body.length).toBe(4096)
    // A body still arriving at the time-out keeps its status; what came is kept, marked truncated.
    expect(await send({ timeoutMs: 300 }, `http://127.0.0.1:${port}/trickle`)).toMatchObject({
      status: 200,
      body: "x",
      bodyTruncated: true,
    })
  })

  it("the headers: at most 32, no cookies, values cut at 512 characters", async () => {
    const outcome = await send({}, `http://127.0.0.1:${port}/many-headers`)
    if (outcome.kind !== "response") throw new Error(JSON.stringify(outcome))
    expect(outcome.status).toBe(503)
    expect(Object.keys(outcome.headers)).toHaveLength(32)
    expect(outcome.headers["set-cookie"]).toBeUndefined()
    expect(outcome.headers["x-long"]).toBe("v".repeat(512))
    expect(outcome.body).toBe("busy")
  })

  it("no answer: refused, reset, TLS, DNS and the SSRF guard each named (the schedule's reason unchanged)", async () => {
    const closed = await new Promise<number>((resolve) => {
      const s = createServer()
      s.listen(0, "127.0.0.1", () => {
        const p = (s.address() as AddressInfo).port
        s.close(() => resolve(p))
      })
    })
    expect(await send({}, `http://127.0.0.1:${closed}/`)).toMatchObject({
      kind: "failure",
      reason: "connection_failed",
      error: "connection_refused",
    })
    expect(await send({}, `http://127.0.0.1:${port}/reset`)).toMatchObject({
      reason: "connection_failed",
      error: "connection_reset",
    })
    // TLS spoken to a plain HTTP server: the handshake fails.
    expect(await send({}, `https://127.0.0.1:${port}/`)).toMatchObject({
      reason: "connection_failed",
      error: "tls_error",
    })
    expect(
      await send({ allowPrivateTargets: false, resolver: resolverFor({}) }, "https://nowhere.example.com/hook"),
    ).toMatchObject({ reason: "connection_failed", error: "dns_failure" })
    expect(
      await send(
        { allowPrivateTargets: false, resolver: resolverFor({ "inside.example.com": ["10.0.0.7"] }) },
        "https://inside.example.com/hook",
      ),
    ).toMatchObject({ reason: "blocked_address", error: "blocked_address" })
    expect(await send({ timeoutMs: 200 }, `http://127.0.0.1:${port}/silent`)).toMatchObject({
      reason: "timeout",
      error: "timeout",
    })
  })
})
