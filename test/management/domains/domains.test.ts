import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Tenancy } from "../../../src/tenancy/service.js"
import { environmentUrls } from "../../../src/tenancy/urls.js"
import { type Bootstrapped, type TestApp, startApp } from "../../support/app.js"
import { startDnsServer } from "./dns-server.js"
import { makeEnvironment, makeKey } from "../support/callers.js"
import { countRows, query } from "../support/db.js"
import { expectProblem } from "../support/problem.js"
import { subjectAuditActions } from "../support/records.js"

const PLATFORM_DOMAIN = "authservice.test"

let app: TestApp
let dns: Awaited<ReturnType<typeof startDnsServer>>
let a: Bootstrapped
let b: Bootstrapped
beforeAll(async () => {
  dns = await startDnsServer()
  // The app's real resolver (node:dns) asks our fake authoritative server.
  app = await startApp({ env: { PLATFORM_DOMAIN, DNS_SERVERS: dns.address } })
  a = await app.bootstrap()
  b = await app.bootstrap()
})
afterAll(async () => {
  await app?.close()
  await dns?.close()
})

const DOMAIN_ID = /^dom_[a-z2-7]{32}$/
let counter = 0
const uniqueHost = (label = "login") => `${label}${++counter}.example.com`
const defaultHost = (env: string) => `env-${env.slice(4)}.login.${PLATFORM_DOMAIN}`

const create = (
  env: string,
  payload: Record<string, unknown>,
  opts: { key?: string; headers?: Record<string, string> } = {},
) =>
  app.management("/v1/domains", {
    method: "POST",
    body: { environment_id: env, ...payload },
    ...(opts.key ? { key: opts.key } : {}),
    ...(opts.headers ? { headers: opts.headers } : {}),
  })
const retry = (id: string, opts: { key?: string; headers?: Record<string, string> } = {}) =>
  app.management(`/v1/domains/${id}/retry-validation`, { method: "POST", ...opts })
const patch = (id: string, payload: unknown, headers: Record<string, string> = {}) =>
  app.management(`/v1/domains/${id}`, { method: "PATCH", body: payload, headers })

/** Registers a domain and publishes its verification record; answers the created domain. */
const verified = async (env: string, hostname: string, rpEnabled: boolean) => {
  const created = (await create(env, { hostname, rp_enabled: rpEnabled })).json
  dns.setTxt(created.verification.name, [created.verification.value])
  return created
}

const environmentState = async (env: string) => {
  const record = await app.run(Effect.flatMap(Tenancy, (t) => t.environment(env)))
  const urls = environmentUrls(app.config, record!)
  const api = (await app.management(`/v1/environments/${env}`)).json
  const [row] = await query<{ active_rp_id: string | null; legacy_rp_id: string | null }>(
    app,
    "select active_rp_id, legacy_rp_id from environments where id = $1",
    [env],
  )
  expect({ interaction_domain: api.interaction_domain, rp_id: api.rp_id }).toEqual({
    interaction_domain: urls.interactionDomain,
    rp_id: urls.rpId,
  })
  return {
    interactionDomain: urls.interactionDomain,
    rpId: urls.rpId,
    activeRpId: row!.active_rp_id,
    legacyRpId: row!.legacy_rp_id,
  }
}

describe("POST /v1/domains", () => {
  it("registers a hostname as pending with a TXT verification record", async () => {
    const hostname = uniqueHost()
    const res = await create(a.environment_id, { hostname })
    expect(res.status).toBe(201)
    expect(res.json.id).toMatch(DOMAIN_ID)
    expect(res.headers["etag"]).toBe(`"${res.json.id}.1"`)
    expect(res.json).toEqual({
      id: res.json.id,
      environment_id: a.environment_id,
      hostname,
      rp_enabled: false,
      status: "pending",
      validation_errors: [],
      verification: {
        type: "TXT",
        name: `_authservice-challenge.${hostname}`,
        value: expect.stringMatching(/^authservice-verification=[\w-]{43}$/),
      },
      created_at: expect.any(String),
      updated_at: expect.any(String),
    })
    expect((await create(a.environment_id, { hostname: uniqueHost(), rp_enabled: true })).json.rp_enabled).toBe(true)
    expect(await subjectAuditActions(app, res.json.id)).toEqual(["domain.created"])
  })

  it("hostname: a lower-case DNS name, not an IP, not localhost-type, not under PLATFORM_DOMAIN (400 invalid_request)", async () => {
    const env = await makeEnvironment(app, a.workspace_id, a.project_id)
    for (const hostname of [
      "Login.Example.com",
      "192.168.1.10",
      "10.0.0.1",
      "::1",
      "[::1]",
      "2001:db8::1",
      "localhost",
      "app.localhost",
      "printer.local",
      "db.internal",
      "nas.home.arpa",
      "box.localdomain",
      `login.${PLATFORM_DOMAIN}`,
      PLATFORM_DOMAIN,
      `env-${"a".repeat(32)}.login.${PLATFORM_DOMAIN}`,
      "example",
      "example.com.",
      "-bad.example.com",
      "bad-.example.com",
      "ex_ample.com",
      "login.example.com:443",
      "https://login.example.com",
      "login.example.com/path",
      "login..example.com",
      `${"a".repeat(64)}.example.com`,
      "login.example.123",
      "*.example.com",
      "api.localhost",
      "localhost",
    ]) {
      const res = await create(env, { hostname })
      expectProblem(res, 400, "invalid_request")
      expect(res.json.detail).toMatch(/^hostname /)
    }
    // An empty or over-long hostname breaks the schema's length rule: invalid_request as well.
    for (const hostname of [
      "",
      `${"a".repeat(60)}.${"b".repeat(60)}.${"c".repeat(60)}.${"d".repeat(60)}.example.com`,
    ]) {
      const res = await create(env, { hostname })
      expectProblem(res, 400, "invalid_request")
      expect(res.json.detail).toContain("hostname")
    }
    // A wrong shape (wrong type, unknown field) is invalid_request_body.
    expectProblem(await create(env, { hostname: 42 }), 400, "invalid_request_body")
    expectProblem(await create(env, {}), 400, "invalid_request_body")
    expectProblem(await create(env, { hostname: "ok.example.com", rp_enabled: "yes" }), 400, "invalid_request_body")
    expectProblem(await create(env, { hostname: "ok.example.com", status: "active" }), 400, "invalid_request_body")
    expect(await countRows(app, "domains", env)).toBe(0)
  })

  it("a Workspace claims a hostname once (409), even under concurrency; deleting frees it", async () => {
    const hostname = uniqueHost("unique")
    const other = await makeEnvironment(app, a.workspace_id, a.project_id)
    const results = await Promise.all([
      create(a.environment_id, { hostname }),
      create(a.environment_id, { hostname }),
      create(other, { hostname }),
    ])
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409])
    for (const r of results.filter((x) => x.status === 409)) expectProblem(r, 409, "domain_already_exists")
    const winner = results.find((r) => r.status === 201)!
    expect((await app.management(`/v1/domains/${winner.json.id}`, { method: "DELETE" })).status).toBe(200)
    expect((await create(a.environment_id, { hostname })).status).toBe(201)
  })
})

describe("custom-domain squatting: a pending claim reserves nothing; only the TXT proof grants the hostname", () => {
  /** Whether the host routes to an Environment (an unknown host is 404 before any route). */
  const served = async (hostname: string) => (await app.request(hostname, "/v1/config")).status !== 404

  it("another Workspace's pending claim does not block the owner, who activates it; then the hostname is taken", async () => {
    const hostname = uniqueHost("squat")
    // Workspace B claims first and never proves anything.
    const squat = await create(b.environment_id, { hostname }, { key: b.api_key })
    expect(squat.status).toBe(201)
    // Workspace A (the real owner) can still claim the same hostname.
    const owner = await create(a.environment_id, { hostname })
    expect(owner.status).toBe(201)
    expect(owner.json.verification.value).not.toBe(squat.json.verification.value)
    // Only A's token is published: only A's claim activates.
    expect(await served(hostname)).toBe(false)
    dns.setTxt(owner.json.verification.name, [owner.json.verification.value])
    const squatRetry = await retry(squat.json.id, { key: b.api_key })
    expect([squatRetry.status, squatRetry.json.status]).toEqual([200, "failed"])
    const ownerRetry = await retry(owner.json.id)
    expect([ownerRetry.status, ownerRetry.json.status, ownerRetry.json.validation_errors]).toEqual([200, "active", []])
    expect(await served(hostname)).toBe(true)

    // Once active, the hostname is unique: new claims anywhere are 409 and change nothing.
    const before = await countRows(app, "domains", b.environment_id)
    expectProblem(await create(b.environment_id, { hostname }, { key: b.api_key }), 409, "domain_already_exists")
    expect(await countRows(app, "domains", b.environment_id)).toBe(before)
    // B publishing its own token too cannot take the hostname over.
    dns.setTxt(owner.json.verification.name, [owner.json.verification.value, squat.json.verification.value])
    const takeover = await retry(squat.json.id, { key: b.api_key })
    expect(takeover.json.status).toBe("failed")
    expect(takeover.json.validation_errors).toEqual([
      `${hostname} is already active as another custom domain; it must be deleted there first`,
    ])
    const [row] = await query<{ environment_id: string }>(
      app,
      "select environment_id from domains where hostname = $1 and status = 'active'",
      [hostname],
    )
    expect(row!.environment_id).toBe(a.environment_id)

    // When A deletes its domain, a proven claim may activate.
    expect((await app.management(`/v1/domains/${owner.json.id}`, { method: "DELETE" })).status).toBe(200)
    expect((await retry(squat.json.id, { key: b.api_key })).json.status).toBe("active")
  })

  it("two proven claims of one hostname validated at once: exactly one becomes active", async () => {
    const hostname = uniqueHost("race")
    const first = (await create(a.environment_id, { hostname })).json
    const second = (await create(b.environment_id, { hostname }, { key: b.api_key })).json
    dns.setTxt(first.verification.name, [first.verification.value, second.verification.value])
    const results = await Promise.all([retry(first.id), retry(second.id, { key: b.api_key })])
    expect(results.map((r) => r.status)).toEqual([200, 200])
    expect(results.map((r) => r.json.status).sort()).toEqual(["active", "failed"])
    const active = await query<{ id: string }>(
      app,
      "select id from domains where hostname = $1 and status = 'active'",
      [hostname],
    )
    expect(active).toHaveLength(1)
  })
})

describe("POST /v1/domains/{id}/retry-validation", () => {
  it("records validation_errors and moves to failed, then to active once the TXT record is right", async () => {
    const env = await makeEnvironment(app, a.workspace_id, a.project_id)
    const created = (await create(env, { hostname: uniqueHost() })).json
    const name = created.verification.name

    await app.advance("1 second")
    const missing = await retry(created.id)
    expect(missing.status).toBe(200)
    expect(missing.json.status).toBe("failed")
    expect(missing.json.validation_errors).toEqual([
      `No TXT record found at ${name}; publish one with the value ${created.verification.value}`,
    ])
    expect(missing.headers["etag"]).toBe(`"${created.id}.2"`)

    dns.setTxt(name, ["some-other-value", "v=spf1 -all"])
    await app.advance("1 second")
    const wrong = await retry(created.id)
    expect(wrong.json.status).toBe("failed")
    expect(wrong.json.validation_errors).toEqual([
      `The TXT records at ${name} do not contain the verification value ${created.verification.value}`,
    ])

    dns.fail(name)
    await app.advance("1 second")
    const broken = await retry(created.id)
    expect(broken.json.status).toBe("failed")
    expect(broken.json.validation_errors[0]).toMatch(
      /^The DNS lookup of .* \(TXT\) failed \(\w+\); retry the validation later$/,
    )

    // A long value split into several character-strings still matches once joined.
    dns.setTxt(name, ["unrelated", created.verification.value])
    await app.advance("1 second")
    const ok = await retry(created.id)
    expect(ok.status).toBe(200)
    expect(ok.json).toMatchObject({ status: "active", validation_errors: [] })
    expect((await app.management(`/v1/domains/${created.id}`)).json).toMatchObject({
      status: "active",
      validation_errors: [],
    })

    // Retrying an active domain answers it unchanged.
    const again = await retry(created.id)
    expect(again.json).toEqual(ok.json)
    expect(again.headers["etag"]).toBe(ok.headers["etag"])
    expect(await subjectAuditActions(app, created.id)).toEqual([
      "domain.created",
      "domain.validation_failed",
      "domain.validation_failed",
      "domain.validation_failed",
      "domain.validated",
    ])
  })

  it("an active domain without rp_enabled serves its host but is not the Interaction Domain", async () => {
    const env = await makeEnvironment(app, a.workspace_id, a.project_id)
    const hostname = uniqueHost()
    const created = await verified(env, hostname, false)
    expect((await retry(created.id)).json.status).toBe("active")
    const state = await environmentState(env)
    expect(state).toEqual({
      interactionDomain: `${defaultHost(env)}:${app.port}`,
      rpId: defaultHost(env),
      activeRpId: null,
      legacyRpId: null,
    })
    // Requests on the hostname reach the Environment (a suspended Environment answers 403 there).
    await query(app, "update environments set status = 'suspended' where id = $1", [env])
    await app.run(Effect.map(Tenancy, (t) => t.forgetEnvironment(env)))
    expectProblem(await app.request(hostname, "/v1/config"), 403, "environment_suspended")
  })
})

describe("THE Interaction Domain and the RP ID", () => {
  it("an active rp_enabled domain becomes the Interaction Domain and active RP ID; the old RP ID becomes legacy", async () => {
    const env = await makeEnvironment(app, a.workspace_id, a.project_id)
    const hostname = uniqueHost("auth")
    const before = await environmentState(env)
    expect(before).toEqual({
      interactionDomain: `${defaultHost(env)}:${app.port}`,
      rpId: defaultHost(env),
      activeRpId: null,
      legacyRpId: null,
    })

    // Before validation the hostname is unknown to the server.
    expectProblem(await app.request(hostname, "/v1/config"), 404, "not_found")
    const created = await verified(env, hostname, true)
    expect((await app.request(hostname, "/healthz")).status).toBe(200)
    expectProblem(await app.request(hostname, "/v1/config"), 404, "not_found")
    const pendingState = await environmentState(env)
    expect(pendingState.rpId).toBe(defaultHost(env))

    await app.advance("1 second")
    const activated = await retry(created.id)
    expect(activated.json.status).toBe("active")
    expect(await environmentState(env)).toEqual({
      interactionDomain: `${hostname}:${app.port}`,
      rpId: hostname,
      activeRpId: hostname,
      legacyRpId: defaultHost(env),
    })
    const migration = (await app.management(`/v1/environments/${env}/rp-migration`)).json
    expect(migration).toMatchObject({ active_rp_id: hostname, legacy_rp_id: defaultHost(env), status: "in_progress" })
    expect(await subjectAuditActions(app, env)).toContain("environment.rp_id_changed")

    // The custom host now reaches the Environment's Interaction Domain surface; the default host keeps serving.
    await query(app, "update environments set status = 'suspended' where id = $1", [env])
    await app.run(Effect.map(Tenancy, (t) => t.forgetEnvironment(env)))
    expectProblem(await app.request(hostname, "/v1/config"), 403, "environment_suspended")
    expectProblem(await app.request(`${defaultHost(env)}:${app.port}`, "/v1/config"), 403, "environment_suspended")
    await query(app, "update environments set status = 'active' where id = $1", [env])
    await app.run(Effect.map(Tenancy, (t) => t.forgetEnvironment(env)))
  })

  it("rp_enabled off moves the Interaction Domain and RP ID back to the default host; on again moves them to the domain", async () => {
    const env = await makeEnvironment(app, a.workspace_id, a.project_id)
    const hostname = uniqueHost("auth")
    const created = await verified(env, hostname, true)
    await retry(created.id)
    await app.advance("1 second")
    const off = await patch(created.id, { rp_enabled: false }, { "if-match": `"${created.id}.2"` })
    expect(off.status).toBe(200)
    expect(off.json).toMatchObject({ rp_enabled: false, status: "active" })
    expect(off.headers["etag"]).toBe(`"${created.id}.3"`)
    // Its host is still served, so passkeys made there stay usable as the legacy RP ID.
    expect(await environmentState(env)).toEqual({
      interactionDomain: `${defaultHost(env)}:${app.port}`,
      rpId: defaultHost(env),
      activeRpId: defaultHost(env),
      legacyRpId: hostname,
    })
    await app.advance("1 second")
    expect((await patch(created.id, { rp_enabled: true })).json.rp_enabled).toBe(true)
    expect(await environmentState(env)).toEqual({
      interactionDomain: `${hostname}:${app.port}`,
      rpId: hostname,
      activeRpId: hostname,
      legacyRpId: defaultHost(env),
    })
  })

  it("a second activated domain takes over; deleting the active one hands back to the remaining one", async () => {
    const env = await makeEnvironment(app, a.workspace_id, a.project_id)
    const first = uniqueHost("one")
    const second = uniqueHost("two")
    const d1 = await verified(env, first, true)
    await retry(d1.id)
    await app.advance("1 second")
    const d2 = await verified(env, second, true)
    await retry(d2.id)
    expect(await environmentState(env)).toEqual({
      interactionDomain: `${second}:${app.port}`,
      rpId: second,
      activeRpId: second,
      legacyRpId: first,
    })
    await app.advance("1 second")
    const deleted = await app.management(`/v1/domains/${d2.id}`, { method: "DELETE" })
    expect(deleted.json).toEqual({ id: d2.id, deleted: true })
    expect(await environmentState(env)).toEqual({
      interactionDomain: `${first}:${app.port}`,
      rpId: first,
      activeRpId: first,
      legacyRpId: null,
    })
    expectProblem(await app.request(second, "/v1/config"), 404, "not_found")
    await app.advance("1 second")
    await app.management(`/v1/domains/${d1.id}`, { method: "DELETE" })
    expect(await environmentState(env)).toEqual({
      interactionDomain: `${defaultHost(env)}:${app.port}`,
      rpId: defaultHost(env),
      activeRpId: defaultHost(env),
      legacyRpId: null,
    })
  })

  it("concurrent validations activate once and move the RP ID once", async () => {
    const env = await makeEnvironment(app, a.workspace_id, a.project_id)
    const hostname = uniqueHost("race")
    const created = await verified(env, hostname, true)
    const results = await Promise.all([1, 2, 3].map(() => retry(created.id)))
    expect(results.map((r) => [r.status, r.json.status])).toEqual([
      [200, "active"],
      [200, "active"],
      [200, "active"],
    ])
    expect((await subjectAuditActions(app, created.id)).filter((x) => x === "domain.validated")).toHaveLength(1)
    expect((await subjectAuditActions(app, env)).filter((x) => x === "environment.rp_id_changed")).toHaveLength(1)
    expect((await environmentState(env)).legacyRpId).toBe(defaultHost(env))
  })
})

describe("GET, PATCH, DELETE /v1/domains/{id}", () => {
  it("If-Match guards PATCH, DELETE and retry-validation (412, nothing changed)", async () => {
    const created = (await create(a.environment_id, { hostname: uniqueHost() })).json
    const stale = { "if-match": `"${created.id}.7"` }
    expectProblem(await patch(created.id, { rp_enabled: true }, stale), 412, "precondition_failed")
    expectProblem(
      await app.management(`/v1/domains/${created.id}`, { method: "DELETE", headers: stale }),
      412,
      "precondition_failed",
    )
    expectProblem(await retry(created.id, { headers: stale }), 412, "precondition_failed")
    const got = await app.management(`/v1/domains/${created.id}`)
    expect(got.headers["etag"]).toBe(`"${created.id}.1"`)
    expect(got.json).toMatchObject({ rp_enabled: false, status: "pending" })
    expect((await patch(created.id, { rp_enabled: true }, { "if-match": `"${created.id}.1"` })).status).toBe(200)
  })

  it("PATCH takes only rp_enabled; unknown or deleted domains are 404", async () => {
    const created = (await create(a.environment_id, { hostname: uniqueHost() })).json
    for (const bad of [
      {},
      { hostname: "x.example.com" },
      { status: "active" },
      { rp_enabled: "true" },
      { rp_enabled: true, extra: 1 },
    ]) {
      expectProblem(await patch(created.id, bad), 400, "invalid_request_body")
    }
    const del = await app.management(`/v1/domains/${created.id}`, { method: "DELETE" })
    expect(del.json).toEqual({ id: created.id, deleted: true })
    for (const id of [created.id, "dom_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"]) {
      expectProblem(await app.management(`/v1/domains/${id}`), 404, "not_found")
      expectProblem(await patch(id, { rp_enabled: true }), 404, "not_found")
      expectProblem(await app.management(`/v1/domains/${id}`, { method: "DELETE" }), 404, "not_found")
      expectProblem(await retry(id), 404, "not_found")
    }
    expect(await subjectAuditActions(app, created.id)).toEqual(["domain.created", "domain.deleted"])
  })
})

describe("GET /v1/domains", () => {
  it("pages by keyset and filters by status", async () => {
    const env = await makeEnvironment(app, a.workspace_id, a.project_id)
    const made: Array<string> = []
    for (let i = 0; i < 5; i++) made.push((await create(env, { hostname: uniqueHost("page") })).json.id)
    await retry(made[0]!)
    const ok = await verified(env, uniqueHost("page"), false)
    made.push(ok.id)
    await retry(ok.id)
    const first = await app.management(`/v1/domains?environment_id=${env}&limit=4`)
    const second = await app.management(`/v1/domains?environment_id=${env}&limit=4&cursor=${first.json.next_cursor}`)
    expect(second.json.next_cursor).toBeNull()
    expect([...first.json.data, ...second.json.data].map((d: { id: string }) => d.id)).toEqual([...made].sort())
    const byStatus = async (status: string) =>
      (await app.management(`/v1/domains?environment_id=${env}&status=${status}`)).json.data.map(
        (d: { id: string }) => d.id,
      )
    expect(await byStatus("failed")).toEqual([made[0]])
    expect(await byStatus("active")).toEqual([ok.id])
    expect(await byStatus("pending")).toEqual(made.slice(1, 5).sort())
    expectProblem(await app.management(`/v1/domains?environment_id=${env}&status=deleted`), 400, "invalid_request")
    expectProblem(await app.management("/v1/domains"), 400, "invalid_request")
  })
})

describe("scopes, tenant isolation, idempotency", () => {
  it("domains:write does not imply domains:read", async () => {
    const writer = await makeKey(app, { workspaceId: a.workspace_id, scopes: ["domains:write"] })
    const created = await create(a.environment_id, { hostname: uniqueHost() }, { key: writer })
    expect(created.status).toBe(201)
    expectProblem(
      await app.management(`/v1/domains?environment_id=${a.environment_id}`, { key: writer }),
      403,
      "insufficient_scope",
    )
    expectProblem(await app.management(`/v1/domains/${created.json.id}`, { key: writer }), 403, "insufficient_scope")
    const reader = await makeKey(app, { workspaceId: a.workspace_id, scopes: ["domains:read"] })
    expectProblem(
      await create(a.environment_id, { hostname: uniqueHost() }, { key: reader }),
      403,
      "insufficient_scope",
    )
    expectProblem(await retry(created.json.id, { key: reader }), 403, "insufficient_scope")
  })

  it("Workspace B's key gets 404 for A's domains; lists never leak", async () => {
    const mine = await verified(a.environment_id, uniqueHost("mine"), false)
    const theirs = (await create(b.environment_id, { hostname: uniqueHost("theirs") }, { key: b.api_key })).json
    const bKey = { key: b.api_key }
    expectProblem(await app.management(`/v1/domains/${mine.id}`, bKey), 404, "not_found")
    expectProblem(
      await app.management(`/v1/domains/${mine.id}`, { ...bKey, method: "PATCH", body: { rp_enabled: true } }),
      404,
      "not_found",
    )
    expectProblem(await app.management(`/v1/domains/${mine.id}`, { ...bKey, method: "DELETE" }), 404, "not_found")
    expectProblem(await retry(mine.id, bKey), 404, "not_found")
    expectProblem(await app.management(`/v1/domains?environment_id=${a.environment_id}`, bKey), 404, "not_found")
    expectProblem(await create(a.environment_id, { hostname: uniqueHost() }, bKey), 404, "not_found")
    const bList = (await app.management(`/v1/domains?environment_id=${b.environment_id}`, bKey)).json.data.map(
      (d: { id: string }) => d.id,
    )
    expect(bList).toContain(theirs.id)
    expect(bList).not.toContain(mine.id)
    const [row] = await query<{ status: string; rp_enabled: boolean; version: number }>(
      app,
      "select status, rp_enabled, version from domains where id = $1",
      [mine.id],
    )
    expect(row).toEqual({ status: "pending", rp_enabled: false, version: 1 })
  })

  it("an Environment-pinned key reaches only its own Environment's domains", async () => {
    const env2 = await makeEnvironment(app, a.workspace_id, a.project_id)
    const pinned = await makeKey(app, {
      workspaceId: a.workspace_id,
      environmentId: env2,
      scopes: ["domains:read", "domains:write"],
    })
    const elsewhere = (await create(a.environment_id, { hostname: uniqueHost() })).json
    expectProblem(await app.management(`/v1/domains/${elsewhere.id}`, { key: pinned }), 404, "not_found")
    expectProblem(await retry(elsewhere.id, { key: pinned }), 404, "not_found")
    expectProblem(
      await app.management(`/v1/domains?environment_id=${a.environment_id}`, { key: pinned }),
      404,
      "not_found",
    )
    expect((await create(env2, { hostname: uniqueHost() }, { key: pinned })).status).toBe(201)
  })

  it("Idempotency-Key replays the creation and refuses another body", async () => {
    const env = await makeEnvironment(app, a.workspace_id, a.project_id)
    const hostname = uniqueHost("idem")
    const headers = { "idempotency-key": "domain-create" }
    const first = await create(env, { hostname }, { headers })
    const again = await create(env, { hostname }, { headers })
    expect([first.status, again.status]).toEqual([201, 201])
    expect(again.json).toEqual(first.json)
    expect(again.headers["idempotent-replayed"]).toBe("true")
    expectProblem(await create(env, { hostname: uniqueHost("idem") }, { headers }), 409, "idempotency_key_conflict")
    expect(await countRows(app, "domains", env)).toBe(1)
  })
})
