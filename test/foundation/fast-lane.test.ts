import { createServer, type IncomingMessage, request as httpRequest, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { Clock, Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeFastLane } from "../../src/oidc/access-token/fast-lane.js"
import { makeStaticAnswers } from "../../src/http/static-answers.js"
import type { RememberedAnswer } from "../../src/oidc/access-token/live-cache.js"
import { introspectionAnswerKey, userinfoAnswerKey } from "../../src/oidc/access-token/remembered-answers.js"
import { parseConfig } from "../../src/platform/config.js"
import { makeMetrics } from "../../src/platform/observability/metrics.js"

// The listener's lane (src/oidc/access-token/fast-lane.ts) answers a request from memory only when its
// method, host, target and headers are exactly those a remembered answer's key names; every
// other request reaches the application unchanged, with its body intact.

const HOST = "localhost:3999"
const config = parseConfig({ PORT: "3999", LOG_REQUESTS: "false" })
const remembered: RememberedAnswer = {
  status: 200,
  contentType: "application/json",
  headers: { "cache-control": "no-store", pragma: "no-cache", vary: "Origin" },
  body: Buffer.from(JSON.stringify({ sub: "usr_remembered" })),
}
const memory = new Map<string, RememberedAnswer>()
/** What reached the application: method, target and the body it read. */
const handedOff: Array<{ method: string; url: string; body: string }> = []
let server: Server
let port: number

beforeAll(async () => {
  const clock = Effect.runSync(Clock.clockWith(Effect.succeed))
  let lane: (request: IncomingMessage, response: ServerResponse) => boolean = () => false
  const application = (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Array<Buffer> = []
    request.on("data", (c: Buffer) => chunks.push(c))
    request.on("end", () => {
      handedOff.push({ method: request.method!, url: request.url!, body: Buffer.concat(chunks).toString("utf8") })
      response.writeHead(418, { "content-type": "text/plain" }).end("application")
    })
  }
  lane = makeFastLane({
    config,
    clock,
    metrics: makeMetrics(),
    staticAnswers: makeStaticAnswers(),
    answer: (key) => memory.get(key),
    handOff: application,
  })
  server = createServer((request, response) => {
    if (!lane(request, response)) application(request, response)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  port = (server.address() as AddressInfo).port
})
afterAll(() => {
  server?.close()
})

/** A request whose body (if any) is written in the given pieces, a few milliseconds apart. */
const send = (method: string, path: string, headers: Record<string, string>, pieces: ReadonlyArray<string> = []) =>
  new Promise<{ status: number; headers: Record<string, unknown>; text: string }>((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, method, path, headers: { host: HOST, ...headers } }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () =>
        resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString("utf8") }),
      )
    })
    req.on("error", reject)
    const write = async () => {
      for (const piece of pieces) {
        req.write(piece)
        await new Promise((r) => setTimeout(r, 5))
      }
      req.end()
    }
    void write()
  })

const USERINFO = "/e/env_fastlane/oauth2/userinfo"
const INTROSPECT = "/e/env_fastlane/oauth2/introspect"
const FORM = "application/x-www-form-urlencoded"

describe("the listener's lane", () => {
  it("replays a remembered UserInfo answer for exactly its token, with the answer's headers and its own request id", async () => {
    memory.set(userinfoAnswerKey(USERINFO, "Bearer tok-a"), remembered)
    const res = await send("GET", USERINFO, { authorization: "Bearer tok-a" })
    expect(res.status).toBe(200)
    expect(res.text).toBe('{"sub":"usr_remembered"}')
    expect(res.headers).toMatchObject({
      "content-type": "application/json",
      "cache-control": "no-store",
      pragma: "no-cache",
      vary: "Origin",
    })
    expect(res.headers["x-request-id"]).toMatch(/^req_[a-z2-7]{32}$/)
    const again = await send("GET", USERINFO, { authorization: "Bearer tok-a" })
    expect(again.headers["x-request-id"]).not.toBe(res.headers["x-request-id"])
  })

  it("leaves to the application: another token, another host, an Origin, a Management key, a query, HEAD, no Authorization", async () => {
    memory.set(userinfoAnswerKey(USERINFO, "Bearer tok-b"), remembered)
    const before = handedOff.length
    const cases: Array<[string, string, Record<string, string>]> = [
      ["GET", USERINFO, { authorization: "Bearer tok-other" }],
      ["GET", USERINFO, { authorization: "bearer tok-b" }],
      ["GET", USERINFO, { authorization: "Bearer tok-b", host: "env-fastlane.login.localhost:3999" }],
      ["GET", USERINFO, { authorization: "Bearer tok-b", origin: "https://app.example.com" }],
      ["GET", USERINFO, { authorization: "Bearer tok-b", "x-management-api-key": "sk_live_x" }],
      ["GET", `${USERINFO}?x=1`, { authorization: "Bearer tok-b" }],
      ["HEAD", USERINFO, { authorization: "Bearer tok-b" }],
      ["GET", USERINFO, {}],
    ]
    for (const [method, path, headers] of cases) expect((await send(method, path, headers)).status).toBe(418)
    expect(handedOff.length - before).toBe(cases.length)
  })

  it("reads an introspection body (in pieces too) and replays the answer remembered for that caller, type and body", async () => {
    const body = "token=at-1&token_type_hint=access_token"
    memory.set(introspectionAnswerKey(INTROSPECT, "Basic Y2xpOnNlY3JldA==", FORM, body), remembered)
    const headers = {
      authorization: "Basic Y2xpOnNlY3JldA==",
      "content-type": FORM,
      "content-length": String(body.length),
    }
    expect((await send("POST", INTROSPECT, headers, [body])).text).toBe('{"sub":"usr_remembered"}')
    const split = await send("POST", INTROSPECT, headers, [body.slice(0, 7), body.slice(7, 20), body.slice(20)])
    expect(split.status).toBe(200)
    expect(split.text).toBe('{"sub":"usr_remembered"}')
  })

  it("hands every other introspection request to the application with its body intact", async () => {
    const body = "token=at-2"
    memory.set(introspectionAnswerKey(INTROSPECT, "Basic Y2xpOnNlY3JldA==", FORM, body), remembered)
    const before = handedOff.length
    const large = `token=${"x".repeat(9000)}`
    const cases: Array<[Record<string, string>, ReadonlyArray<string>]> = [
      [{ authorization: "Basic b3RoZXI6c2VjcmV0", "content-type": FORM, "content-length": "10" }, ["token=at-2"]],
      [
        { authorization: "Basic Y2xpOnNlY3JldA==", "content-type": "application/json", "content-length": "10" },
        ["token=at-2"],
      ],
      [{ authorization: "Basic Y2xpOnNlY3JldA==", "content-type": FORM, "content-length": "10" }, ["token=", "at-3"]],
      [
        { authorization: "Basic Y2xpOnNlY3JldA==", "content-type": FORM, "content-length": String(large.length) },
        [large],
      ],
      [
        { authorization: "Basic Y2xpOnNlY3JldA==", "content-type": FORM, "transfer-encoding": "chunked" },
        ["token=at-2"],
      ],
      [
        {
          authorization: "Basic Y2xpOnNlY3JldA==",
          "content-type": FORM,
          "content-length": "10",
          origin: "https://app.example.com",
        },
        ["token=at-2"],
      ],
    ]
    for (const [headers, pieces] of cases) expect((await send("POST", INTROSPECT, headers, pieces)).status).toBe(418)
    const reached = handedOff.slice(before)
    expect(reached.map((r) => r.body)).toEqual([
      "token=at-2",
      "token=at-2",
      "token=at-3",
      large,
      "token=at-2",
      "token=at-2",
    ])
  })
})
