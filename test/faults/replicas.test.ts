import { readFileSync } from "node:fs"
import { createServer, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { freePort } from "../../src/platform/free-port.js"
import { createClient, createUser, form, mintCode, type TestClient } from "../oidc/support.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { makeKey } from "../support/tenancy.js"
import { type Answer, call, type Child, killGroup, startEntry, stopChild, until } from "./support.js"

// Two server processes and two worker processes on one database, as in production behind a
// load balancer: every race of the spec still has exactly one winner when its contenders are
// spread over both servers, each delivery is sent once, and a worker killed with SIGKILL in
// the middle of a delivery has its job finished by the other worker.

const PUBLIC_PORT = 4000 // the port in the public host names both servers are configured with
const ISSUER_HOST = `localhost:${PUBLIC_PORT}`
const MANAGEMENT_HOST = `api.localhost:${PUBLIC_PORT}`

let app: TestApp
let b: Bootstrapped
const servers: Array<{ child: Child; port: number }> = []
const workers: Array<Child> = []
let receiver: Server
let holdNext = false
const held: Array<ServerResponse> = []
const received: Array<{ eventId: string; webhookPath: string }> = []

beforeAll(async () => {
  app = await startApp()
  b = await app.bootstrap()
  receiver = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      received.push({ eventId: String(req.headers["x-auth-event-id"]), webhookPath: req.url ?? "" })
      if (holdNext) {
        holdNext = false
        held.push(res)
        return
      }
      res.writeHead(204).end()
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
  const env = {
    DATABASE_URL: app.databaseUrl,
    MASTER_KEY: Buffer.from(app.config.masterKey!).toString("base64url"),
    CANONICAL_ISSUER_HOST: ISSUER_HOST,
    MANAGEMENT_HOST,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    WORKER_CONCURRENCY: "4",
    RATE_LIMIT_IP_PER_MINUTE: "10000",
  }
  for (const name of ["a", "b"]) {
    const port = await freePort()
    servers.push({
      child: await startEntry(
        "src/main.ts",
        { ...env, PORT: String(port), DATA_DIR: `/tmp/authservice-replica-${name}` },
        /authservice listening on/,
      ),
      port,
    })
  }
  for (const name of ["a", "b"])
    workers.push(
      await startEntry("src/worker.ts", { ...env, DATA_DIR: `/tmp/authservice-worker-${name}` }, /worker: running/),
    )
}, 180_000)

// Codes minted by this process are checked by child processes on real time.
beforeEach(() => app.catchUpWithWallClock())

afterAll(async () => {
  for (const res of held) res.destroy()
  await Promise.all([...servers.map((s) => stopChild(s.child)), ...workers.map(stopChild)])
  receiver?.close()
  await app?.close()
}, 60_000)

/** The i-th contender goes to server a or b, alternately. */
const server = (i: number) => servers[i % 2]!.port

const token = (i: number, params: Record<string, string>, client: TestClient) =>
  call(server(i), ISSUER_HOST, `/e/${b.environment_id}/oauth2/token`, {
    method: "POST",
    rawBody: form({ ...params, client_id: client.id }),
    headers: { "content-type": "application/x-www-form-urlencoded" },
  })

const race = <T>(n: number, contender: (i: number) => Promise<T>) =>
  Promise.all(Array.from({ length: n }, (_, i) => contender(i)))

describe("races spread over two servers have one winner", () => {
  it("an authorization code: exactly one exchange succeeds", async () => {
    const client = await createClient(app, b)
    const user = await createUser(app, b)
    const minted = await mintCode(app, b, client, user)
    const answers = await race(12, (i) =>
      token(
        i,
        {
          grant_type: "authorization_code",
          code: minted.code,
          code_verifier: minted.verifier,
          redirect_uri: client.redirectUri,
        },
        client,
      ),
    )
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1)
    for (const a of answers.filter((x) => x.status !== 200)) {
      expect(a.status).toBe(400)
      expect(JSON.parse(a.text).error).toBe("invalid_grant")
    }
  })

  it("a refresh token: one rotation; every contender within the grace window gets the winner's answer", async () => {
    const client = await createClient(app, b)
    const user = await createUser(app, b)
    const minted = await mintCode(app, b, client, user)
    const first = await token(
      0,
      {
        grant_type: "authorization_code",
        code: minted.code,
        code_verifier: minted.verifier,
        redirect_uri: client.redirectUri,
      },
      client,
    )
    expect(first.status, first.text).toBe(200)
    const refreshToken = JSON.parse(first.text).refresh_token as string
    const answers = await race(12, (i) =>
      token(i, { grant_type: "refresh_token", refresh_token: refreshToken }, client),
    )
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200))
    const issued = new Set(answers.map((a) => JSON.parse(a.text).refresh_token as string))
    expect(issued.size).toBe(1)
    expect([...issued][0]!.split(".")[1]).toBe("2")
  })

  it("an OTP challenge: wrong codes from both servers count exactly 5, then the challenge is dead", async () => {
    const client = await createClient(app, b)
    const publicApi = (i: number, path: string, body: unknown) =>
      call(server(i), ISSUER_HOST, `/e/${b.environment_id}/v1${path}`, { method: "POST", body })
    const txn = await publicApi(0, "/auth/transactions", {
      client_id: client.id,
      redirect_uri: client.redirectUri,
      code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
      code_challenge_method: "S256",
      state: "s",
      scope: "openid",
      nonce: "n",
    })
    expect(txn.status, txn.text).toBe(201)
    const transactionId = JSON.parse(txn.text).transaction_id as string
    const started = await publicApi(1, `/auth/transactions/${transactionId}/email/start`, {
      email: "otp-race@example.com",
    })
    expect(started.status, started.text).toBe(202)
    const challengeId = JSON.parse(started.text).challenge_id as string
    // A code that is certainly wrong: the real one is 6 random digits; "000000" and "999999" cannot both be right.
    const answers = await race(12, (i) =>
      publicApi(i, `/auth/transactions/${transactionId}/email/verify`, {
        challenge_id: challengeId,
        code: i % 2 ? "000000" : "999999",
      }),
    )
    expect(
      answers.every((a) => a.status === 400 && JSON.parse(a.text).code === "invalid_code"),
      answers.map((a) => a.text).join("\n"),
    ).toBe(true)
    const [row] = await app.run(
      sqlRow<{ failed_attempts: number; status: string }>(
        "select failed_attempts, status from email_challenges where id = $1",
        [challengeId],
      ),
    )
    expect(row).toEqual({ failed_attempts: 5, status: "invalidated" })
  })

  it("an Idempotency-Key: every contender gets the one user it created", async () => {
    const key = await makeKey(app, { workspaceId: b.workspace_id, scopes: ["users:write", "users:read"] })
    const answers = await race(12, (i) =>
      call(server(i), MANAGEMENT_HOST, `/v1/users?environment_id=${b.environment_id}`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "idempotency-key": "replica-race" },
        body: { environment_id: b.environment_id, email: "idem-race@example.com" },
      }),
    )
    const created = answers.filter((a) => a.status === 201)
    expect(created.length, answers.map((a) => `${a.status} ${a.text}`).join("\n")).toBeGreaterThanOrEqual(1)
    expect(new Set(created.map((a) => JSON.parse(a.text).id)).size).toBe(1)
    // A contender that arrived while the first was still running is told so (409), never given a second user.
    for (const a of answers.filter((x) => x.status !== 201)) expect(a.status).toBe(409)
    const [count] = await app.run(
      sqlRow<{ n: number }>("select count(*)::int as n from users where environment_id = $1 and email = $2", [
        b.environment_id,
        "idem-race@example.com",
      ]),
    )
    expect(count!.n).toBe(1)
  })
})

describe("webhook delivery with two workers", () => {
  it("each event reaches each subscription once; a SIGKILLed worker's in-flight delivery is finished by the other within a minute", async () => {
    const key = await makeKey(app, { workspaceId: b.workspace_id, scopes: ["users:write", "webhooks:write"] })
    const auth = { authorization: `Bearer ${key}` }
    const url = (name: string) => `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/${name}`
    for (const name of ["one", "two"]) {
      const hook = await call(server(0), MANAGEMENT_HOST, "/v1/webhooks", {
        method: "POST",
        headers: auth,
        body: { environment_id: b.environment_id, url: url(name), event_types: ["user.created"] },
      })
      expect(hook.status, hook.text).toBe(201)
    }
    const createUsers = async (prefix: string, n: number) => {
      const answers: Array<Answer> = await race(n, (i) =>
        call(server(i), MANAGEMENT_HOST, `/v1/users?environment_id=${b.environment_id}`, {
          method: "POST",
          headers: auth,
          body: { environment_id: b.environment_id, email: `${prefix}-${i}@example.com` },
        }),
      )
      expect(answers.every((a) => a.status === 201)).toBe(true)
      return answers.map((a) => JSON.parse(a.text).id as string)
    }

    const steady = await createUsers("steady", 20)
    const events = async () =>
      app.run(
        sqlRow<{ id: string }>(
          "select id from event_outbox where environment_id = $1 and type = 'user.created' and envelope->'payload'->>'userId' = any($2)",
          [b.environment_id, steady],
        ),
      )
    await until(
      "every event delivered to both subscriptions",
      async () => {
        const ids = (await events()).map((e) => e.id)
        return ids.length === steady.length && ids.every((id) => received.filter((r) => r.eventId === id).length >= 2)
          ? ids
          : undefined
      },
      60_000,
      200,
    )
    const counts = new Map<string, number>()
    for (const r of received)
      counts.set(`${r.eventId} ${r.webhookPath}`, (counts.get(`${r.eventId} ${r.webhookPath}`) ?? 0) + 1)
    expect([...counts.values()].every((n) => n === 1)).toBe(true)

    // The crash: the next send is held open; the worker sending it is killed.
    holdNext = true
    const before = received.length
    await createUsers("crash", 1)
    await until("the held delivery", async () => (held.length === 1 ? true : undefined), 30_000)
    const heldEvent = received[before]!.eventId
    const [job] = await app.run(
      sqlRow<{ locked_by: string }>("select locked_by from graphile_worker.jobs where key = $1", [
        `webhooks.fanout:${heldEvent}`,
      ]),
    )
    const [beat] = await app.run(
      sqlRow<{ process_id: string }>("select process_id from worker_heartbeats where $1 = any(worker_ids)", [
        job!.locked_by,
      ]),
    )
    const holderPid = Number(/^wkp_(\d+)_/.exec(beat!.process_id)![1])
    const victim = workers.find((w) => processGroupOf(holderPid) === w.process.pid)!
    const survivor = workers.find((w) => w !== victim)!
    killGroup(victim, "SIGKILL")
    await victim.exited
    const killedAt = Date.now()
    await until(
      "the other worker to deliver the held event to both subscriptions",
      async () =>
        received.filter((r) => r.eventId === heldEvent).length >= 3 &&
        received.filter((r) => r.eventId === heldEvent && r.webhookPath === received[before]!.webhookPath).length >= 2
          ? true
          : undefined,
      60_000,
      200,
    )
    expect(Date.now() - killedAt).toBeLessThan(60_000)
    expect(survivor.output()).toContain("released the jobs of workers that stopped beating")
    // The receiver records a send when its body arrives, before the worker has read the answer and
    // written the delivery row: wait for the row, as the spec's record follows the response.
    const statuses = async () =>
      app.run(
        sqlRow<{ status: string; n: number }>(
          "select status, count(*)::int as n from webhook_deliveries where event_id = $1 group by status",
          [heldEvent],
        ),
      )
    await until(
      "both delivery records to be written as delivered",
      async () => ((await statuses()).some((r) => r.status !== "delivered") ? undefined : true),
      10_000,
      100,
    )
    expect(await statuses()).toEqual([{ status: "delivered", n: 2 }])
  }, 150_000)
})

/** The process group of a process (our children are group leaders: see startEntry). */
const processGroupOf = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2])
}

const sqlRow = <T extends object>(text: string, params: ReadonlyArray<unknown>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return (yield* sql.unsafe<T>(text, params)) as unknown as ReadonlyArray<T>
  })
