import { createServer } from "node:net"
import { describe, expect, it } from "vitest"
import { freePort } from "../../src/platform/free-port.js"

const listen = (port: number) =>
  new Promise<() => Promise<void>>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(port, "127.0.0.1", () => resolve(() => new Promise((done) => server.close(() => done()))))
  })

describe("freePort", () => {
  it("gives ports below Linux's range for outgoing connections, never the same twice, each one bindable", async () => {
    const ports: Array<number> = []
    for (let i = 0; i < 200; i++) ports.push(await freePort())
    expect(new Set(ports).size).toBe(200)
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(20_000)
      expect(port).toBeLessThan(32_768)
    }
    // Each is free to bind at once, all of them together.
    const closes = await Promise.all(ports.map(listen))
    await Promise.all(closes.map((close) => close()))
  })
})
