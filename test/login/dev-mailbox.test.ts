import { request as httpRequest } from "node:http"
import { networkInterfaces } from "node:os"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Mailer } from "../../src/platform/mailer.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"

const CODE = "428517"

// docs/decisions/rate-limits-and-caches.md: the development mailbox shows every OTP code; only this machine may read it.

/** This machine's first non-loopback IPv4 address: connecting to it makes the socket peer non-loopback. */
const lanAddress = () =>
  Object.values(networkInterfaces())
    .flat()
    .find((i) => i && !i.internal && i.family === "IPv4")?.address

/** GET over a real socket to `address` (not 127.0.0.1), with the Host header that picks the surface. */
const getVia = (address: string, port: number, host: string, path: string, headers: Record<string, string> = {}) =>
  new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = httpRequest({ host: address, port, path, headers: { host, ...headers } }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }))
    })
    req.on("error", reject)
    req.end()
  })

describe("listening on every interface (HOST=0.0.0.0)", () => {
  let app: TestApp
  let b: Bootstrapped
  beforeAll(async () => {
    app = await startApp({ env: { HOST: "0.0.0.0" } })
    b = await app.bootstrap()
    // one code in the development mailer, as the login-code job would put it there
    await app.run(
      Mailer.use((m) =>
        m.send({ to: "someone@example.com", subject: "Your sign-in code", text: `Your sign-in code is ${CODE}` }),
      ),
    )
  })
  afterAll(async () => {
    await app?.close()
  })

  it("a caller on this machine reads the mailbox", async () => {
    const res = await app.request(b.interaction_domain, "/login/dev-mailbox")
    expect(res.status).toBe(200)
    expect(res.text).toContain(CODE)
  })

  it("a caller from the network gets 404, and no code", async () => {
    const address = lanAddress()
    expect(address, "this test needs a non-loopback IPv4 interface").toBeDefined()
    const res = await getVia(address!, app.port, b.interaction_domain, "/login/dev-mailbox")
    expect(res.status).toBe(404)
    expect(res.text).not.toContain(CODE)
    // the rest of the Interaction Domain is served to it as usual
    expect((await getVia(address!, app.port, b.interaction_domain, "/login")).status).not.toBe(404)
  })

  it("a forwarded request is refused even from a local proxy; no header makes a remote caller local", async () => {
    expect(
      (await app.request(b.interaction_domain, "/login/dev-mailbox", { headers: { "x-forwarded-for": "127.0.0.1" } }))
        .status,
    ).toBe(404)
    expect(
      (await app.request(b.interaction_domain, "/login/dev-mailbox", { headers: { forwarded: "for=127.0.0.1" } }))
        .status,
    ).toBe(404)
    const remote = await getVia(lanAddress()!, app.port, b.interaction_domain, "/login/dev-mailbox", {
      "x-forwarded-for": "127.0.0.1",
      "x-real-ip": "127.0.0.1",
    })
    expect(remote.status).toBe(404)
  })
})

describe("the development default", () => {
  let app: TestApp
  beforeAll(async () => {
    app = await startApp()
  })
  afterAll(async () => {
    await app?.close()
  })

  it("listens on loopback only: the port is closed on the network address", async () => {
    expect(app.config.listenHost).toBe("127.0.0.1")
    expect((await app.request(app.config.managementHost, "/healthz")).status).toBe(200)
    await expect(getVia(lanAddress()!, app.port, app.config.managementHost, "/healthz")).rejects.toMatchObject({
      code: "ECONNREFUSED",
    })
  })
})
