import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { expect } from "vitest"
import { makeSender } from "../../src/webhooks/delivery/send.js"
import type { TestApp } from "../support/app.js"

/** What the receiver does with one request. */
export type Behaviour =
  | {
      readonly status: number
      /** Answers after this long (a slow receiver). */
      readonly afterMs?: number
      /** The response body ("ok" unless given) and headers (content-type text/plain unless given). */
      readonly body?: string
      readonly headers?: Readonly<Record<string, string | ReadonlyArray<string>>>
    }
  /** Never answers; the request stays open until the client gives up (time-out) or the receiver closes. */
  | { readonly hold: true }

export interface Received {
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly rawBody: string
  /** When the request arrived (wall clock; only for the benchmark-like checks). */
  readonly at: number
}

/**
 * A real HTTP receiver on loopback. Each request takes the next scripted behaviour (the
 * last one repeats); every request is recorded with its raw body, byte for byte.
 */
export const startReceiver = async (script: ReadonlyArray<Behaviour> = [{ status: 200 }]) => {
  const received: Array<Received> = []
  const held: Array<ServerResponse> = []
  let steps = [...script]
  let onRequest: ((r: Received) => void) | undefined
  const server: Server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const record: Received = {
        path: req.url ?? "",
        headers: req.headers,
        rawBody: Buffer.concat(chunks).toString("utf8"),
        at: Date.now(),
      }
      received.push(record)
      const step = steps.length > 1 ? steps.shift()! : steps[0]!
      onRequest?.(record)
      if ("hold" in step) {
        held.push(res)
        return
      }
      const answer = () =>
        res.writeHead(step.status, { "content-type": "text/plain", ...step.headers }).end(step.body ?? "ok")
      if (step.afterMs) setTimeout(answer, step.afterMs)
      else answer()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port
  return {
    port,
    url: (path = "/hook") => `http://127.0.0.1:${port}${path}`,
    received,
    script: (next: ReadonlyArray<Behaviour>) => {
      steps = [...next]
    },
    /** Resolves with the next request to arrive. */
    next: () =>
      new Promise<Received>((resolve) => {
        onRequest = (r) => {
          onRequest = undefined
          resolve(r)
        }
      }),
    close: async () => {
      for (const res of held) res.destroy()
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
export type Receiver = Awaited<ReturnType<typeof startReceiver>>

/** The app env for webhook tests: a loopback receiver needs private targets (dev/test only). */
export const WEBHOOK_TEST_ENV = { WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" }

/** A sender like the app's but with a short time-out, so the time-out scenario takes a second. */
export const fastSender = (timeoutMs = 1_000) =>
  makeSender({ timeoutMs, maxResponseBytes: 64 * 1024, allowPrivateTargets: true })

export const createWebhook = async (app: TestApp, body: Record<string, unknown>, key?: string) => {
  const res = await app.management("/v1/webhooks", { method: "POST", body, ...(key ? { key } : {}) })
  expect(res.status, res.text).toBe(201)
  return res.json as {
    id: string
    secret: string
    url: string
    event_types: Array<string>
    status: string
    environment_id: string
  }
}

export const sqlRows = <T extends object>(app: TestApp, text: string, params: ReadonlyArray<unknown> = []) =>
  app.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      return (yield* sql.unsafe<T>(text, params)) as unknown as ReadonlyArray<T>
    }),
  )

export const countRows = async (app: TestApp, text: string, params: ReadonlyArray<unknown> = []) =>
  (await sqlRows<{ n: number }>(app, `select count(*)::int as n from (${text}) q`, params))[0]!.n
