import { randomBytes } from "node:crypto"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"

/**
 * A local stand-in for the part of Stripe's API we use (we cannot reach Stripe from tests):
 * POST /v1/customers, /v1/checkout/sessions, /v1/billing_portal/sessions, form-encoded as
 * the `stripe` package sends them, answered in Stripe's JSON shapes; `Idempotency-Key`
 * replays the first answer, as Stripe does. Every request is recorded.
 */
export interface StripeRequest {
  readonly path: string
  readonly params: Record<string, string>
  readonly idempotencyKey: string | undefined
  readonly authorization: string | undefined
  readonly stripeVersion: string | undefined
}

const id = (prefix: string) => `${prefix}_${randomBytes(12).toString("hex")}`

export const startFakeStripe = async (secretKey: string) => {
  const requests: Array<StripeRequest> = []
  const replays = new Map<string, string>()
  const failures: Array<{ path: string; status: number }> = []
  const server: Server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const path = (req.url ?? "").split("?")[0]!
      const params = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString("utf8")))
      const idempotencyKey = req.headers["idempotency-key"] as string | undefined
      requests.push({
        path,
        params,
        idempotencyKey,
        authorization: req.headers["authorization"],
        stripeVersion: req.headers["stripe-version"] as string | undefined,
      })
      const send = (status: number, body: unknown) => {
        const text = JSON.stringify(body)
        if (status < 300 && idempotencyKey) replays.set(`${path} ${idempotencyKey}`, text)
        res.writeHead(status, { "content-type": "application/json", "request-id": id("req") }).end(text)
      }
      if (req.headers["authorization"] !== `Bearer ${secretKey}`) {
        return send(401, { error: { type: "invalid_request_error", message: "Invalid API Key provided" } })
      }
      const failure = failures.findIndex((f) => f.path === path)
      if (failure >= 0) {
        const [f] = failures.splice(failure, 1)
        return send(f!.status, { error: { type: "invalid_request_error", message: "scripted failure" } })
      }
      const replay = idempotencyKey ? replays.get(`${path} ${idempotencyKey}`) : undefined
      if (replay)
        return void res
          .writeHead(200, { "content-type": "application/json", "idempotent-replayed": "true" })
          .end(replay)
      const created = Math.floor(Date.now() / 1000)
      if (req.method === "POST" && path === "/v1/customers") {
        return send(200, {
          id: id("cus"),
          object: "customer",
          created,
          livemode: false,
          name: params["name"] ?? null,
          metadata: { workspace_id: params["metadata[workspace_id]"] },
        })
      }
      if (req.method === "POST" && path === "/v1/checkout/sessions") {
        const sessionId = id("cs_test")
        return send(200, {
          id: sessionId,
          object: "checkout.session",
          created,
          expires_at: created + 24 * 3600,
          livemode: false,
          mode: params["mode"],
          status: "open",
          customer: params["customer"],
          client_reference_id: params["client_reference_id"] ?? null,
          success_url: params["success_url"],
          cancel_url: params["cancel_url"],
          url: `https://checkout.stripe.com/c/pay/${sessionId}`,
        })
      }
      if (req.method === "POST" && path === "/v1/billing_portal/sessions") {
        const sessionId = id("bps")
        return send(200, {
          id: sessionId,
          object: "billing_portal.session",
          created,
          livemode: false,
          customer: params["customer"],
          return_url: params["return_url"],
          url: `https://billing.stripe.com/p/session/${sessionId}`,
        })
      }
      send(404, {
        error: { type: "invalid_request_error", message: `Unrecognized request URL (${req.method}: ${path})` },
      })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port
  return {
    apiBase: `http://127.0.0.1:${port}`,
    requests,
    of: (path: string) => requests.filter((r) => r.path === path),
    /** The next request to `path` is answered with this status (a Stripe error body). */
    failNext: (path: string, status: number) => {
      failures.push({ path, status })
    },
    /** Forgets every Idempotency-Key, as Stripe does after 24 hours. */
    forgetIdempotencyKeys: () => {
      replays.clear()
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
export type FakeStripe = Awaited<ReturnType<typeof startFakeStripe>>
