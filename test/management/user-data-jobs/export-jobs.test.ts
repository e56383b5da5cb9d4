import { randomBytes } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { tasks, crontab } from "../../../src/jobs/tasks.js"
import { purgeExpiredExports } from "../../../src/management/user-data-jobs/export-service.js"
import { type Bootstrapped, type TestApp, startApp } from "../../support/app.js"
import { makeEnvironment, makeKey } from "../support/callers.js"
import { query } from "../support/db.js"
import { expectProblem } from "../support/problem.js"
import { workspaceAuditRows } from "../support/records.js"

// POST /v1/user-export-jobs, GET /v1/user-export-jobs/{jobId} and .../download (spec:
// Management API, "Import / export jobs": "the download URL of a successful export is
// time-limited; an expired one gives 410"). The download window is 15 minutes (TestClock).

let app: TestApp
let b: Bootstrapped
beforeAll(async () => {
  app = await startApp()
  b = await app.bootstrap()
})
afterAll(async () => {
  await app?.close()
})

const rid = (prefix: string) =>
  `${prefix}_${Array.from(randomBytes(32), (x) => "abcdefghijklmnopqrstuvwxyz234567"[x % 32]).join("")}`

/** A user with one identity, one passkey and two sessions (one revoked), seeded like login would leave them. */
const seedUser = async (w: Bootstrapped) => {
  const created = await app.management(`/v1/users?environment_id=${w.environment_id}`, {
    method: "POST",
    key: w.api_key,
    body: { email: `export-${randomBytes(4).toString("hex")}@example.com`, name: "Ada", metadata: { tier: "gold" } },
  })
  expect(created.status).toBe(201)
  const userId: string = created.json.id
  const now = new Date(app.now())
  const identityId = rid("idn")
  await query(
    app,
    `insert into identities (id, workspace_id, environment_id, user_id, provider, provider_subject, email, linked_at)
    values ($1, $2, $3, $4, 'github', 'provider-subject-secret-ish-' || $1, 'ada@github.example', $5)`,
    [identityId, w.workspace_id, w.environment_id, userId, now],
  )
  const passkeyId = rid("psk")
  await query(
    app,
    `insert into passkeys (id, workspace_id, environment_id, user_id, credential_id, public_key, sign_count, aaguid,
      backed_up, device_type, rp_id, user_handle, name, created_at)
    values ($1, $2, $3, $4, 'CREDENTIAL-ID-XYZ-' || $1, $5, 42, '00000000-0000-0000-0000-000000000000', true, 'multiDevice', 'localhost', 'USER-HANDLE-XYZ', 'Laptop', $6)`,
    [passkeyId, w.workspace_id, w.environment_id, userId, Buffer.from("PUBLIC-KEY-BYTES"), now],
  )
  const sessions = [rid("ses"), rid("ses")]
  for (const [i, id] of sessions.entries()) {
    await query(
      app,
      `insert into login_sessions (id, workspace_id, environment_id, user_id, device_name, method, acr, auth_time,
        security_version, ip_prefix_hash, created_at, last_active_at, idle_expires_at, absolute_expires_at, revoked_at, revoked_reason)
      values ($1, $2, $3, $4, 'Firefox', 'email_otp', 'urn:example-auth:loa:basic', $5, 1, 'IPHASH0000', $5, $5, $6, $6, $7, $8)`,
      [
        id,
        w.workspace_id,
        w.environment_id,
        userId,
        now,
        new Date(now.getTime() + 86400_000),
        i === 1 ? now : null,
        i === 1 ? "user_logout" : null,
      ],
    )
  }
  return { userId, identityId, passkeyId, sessions }
}

const startExport = (
  w: Bootstrapped,
  body: Record<string, unknown>,
  options: { key?: string; headers?: Record<string, string> } = {},
) =>
  app.management("/v1/user-export-jobs", {
    method: "POST",
    body,
    key: options.key ?? w.api_key,
    ...(options.headers ? { headers: options.headers } : {}),
  })

describe("user export", () => {
  it("builds the artifact during the request: 201 completed with a download_url valid 15 minutes", async () => {
    const w = await app.bootstrap()
    const seeded = await seedUser(w)
    const res = await startExport(w, { environment_id: w.environment_id, target_user_id: seeded.userId })
    expect(res.status).toBe(201)
    const expires = new Date(app.now() + 15 * 60_000).toISOString()
    expect(res.json).toEqual({
      id: expect.stringMatching(/^job_[a-z2-7]{32}$/),
      environment_id: w.environment_id,
      target_user_id: seeded.userId,
      status: "completed",
      download_url: `http://${app.config.managementHost}/v1/user-export-jobs/${res.json.id}/download`,
      download_expires_at: expires,
      size_bytes: expect.any(Number),
      error: null,
      created_at: expect.any(String),
      completed_at: expect.any(String),
    })
    expect(res.headers["location"]).toBe(`/v1/user-export-jobs/${res.json.id}`)
    const got = await app.management(`/v1/user-export-jobs/${res.json.id}`, { key: w.api_key })
    expect(got.status).toBe(200)
    expect(got.json).toEqual(res.json)

    const download = await app.management(new URL(res.json.download_url).pathname, { key: w.api_key })
    expect(download.status).toBe(200)
    expect(download.headers["content-type"]).toContain("application/json")
    expect(download.headers["cache-control"]).toBe("no-store")
    expect(download.headers["content-disposition"]).toBe(`attachment; filename="user-export-${res.json.id}.json"`)
    expect(Buffer.byteLength(download.text)).toBe(res.json.size_bytes)
    const artifact = download.json
    expect(artifact).toMatchObject({
      format: "authservice.user-export",
      version: 1,
      job_id: res.json.id,
      environment_id: w.environment_id,
      user: { id: seeded.userId, name: "Ada", metadata: { tier: "gold" }, status: "active" },
      identities: [{ identity_id: seeded.identityId, provider: "github", email: "ada@github.example" }],
      passkeys: [{ passkey_id: seeded.passkeyId, name: "Laptop", backed_up: true }],
    })
    expect(artifact.sessions).toHaveLength(2)
    expect(artifact.sessions.map((s: any) => s.revoked_reason).sort()).toEqual([null, "user_logout"].sort())
    // Never secrets or credential material.
    for (const secret of [
      "CREDENTIAL-ID-XYZ",
      "USER-HANDLE-XYZ",
      "PUBLIC-KEY",
      "provider-subject-secret-ish",
      "IPHASH0000",
      "security_version",
      "user_handle",
      "sign_count",
    ]) {
      expect(download.text).not.toContain(secret)
    }
    // Sealed at rest, in chunks (sql/0152).
    const chunks = await query<{ sealed: string }>(
      app,
      "select sealed from user_export_chunks where job_id = $1 order by seq",
      [res.json.id],
    )
    expect(chunks).toHaveLength(1)
    expect(chunks[0]!.sealed).toMatch(/^v1\./)
    // Neither the artifact's text nor its bytes under any segment's base64url (a three-letter name
    // appears by chance in about 1 % of random ciphertexts, so the marker is the whole user line).
    const marker = '"metadata":{"tier":"gold"}'
    expect(download.text).toContain(marker)
    expect(chunks[0]!.sealed).not.toContain(marker)
    for (const segment of chunks[0]!.sealed.split(".")) {
      expect(Buffer.from(segment, "base64url").toString("latin1")).not.toContain(marker)
    }
  })

  it("a user with thousands of sessions: the artifact is written and stored in bounded sealed chunks and downloads in order", async () => {
    const w = await app.bootstrap()
    const { userId } = await seedUser(w)
    const now = new Date(app.now())
    // 6,000 more sessions (about 2.4 MB of JSON), created one second apart.
    await query(
      app,
      `insert into login_sessions (id, workspace_id, environment_id, user_id, device_name, method, acr, auth_time,
        security_version, ip_prefix_hash, created_at, last_active_at, idle_expires_at, absolute_expires_at)
      select 'ses_bulk' || lpad(i::text, 28, '0'), $1, $2, $3, 'Browser ' || i, 'email_otp', 'urn:example-auth:loa:basic', $4, 1, 'IPHASH0000',
        $4::timestamptz - make_interval(secs => 10000 - i), $4, $4, $4
      from generate_series(1, 6000) as i`,
      [w.workspace_id, w.environment_id, userId, now],
    )
    const res = await startExport(w, { environment_id: w.environment_id, target_user_id: userId })
    expect(res.status).toBe(201)
    const chunks = await query<{ seq: number; length: number }>(
      app,
      "select seq, length(sealed) as length from user_export_chunks where job_id = $1 order by seq",
      [res.json.id],
    )
    expect(chunks.length).toBeGreaterThan(20)
    expect(chunks.map((c) => c.seq)).toEqual(chunks.map((_, i) => i))
    // 64 KiB of JSON (plus the session that crossed the mark), base64url-sealed.
    for (const c of chunks) expect(c.length).toBeLessThan(Math.ceil(((64 * 1024 + 2048) * 4) / 3) + 200)

    const download = await app.management(`/v1/user-export-jobs/${res.json.id}/download`, { key: w.api_key })
    expect(download.status).toBe(200)
    expect(Number(download.headers["content-length"])).toBe(res.json.size_bytes)
    expect(Buffer.byteLength(download.text)).toBe(res.json.size_bytes)
    const artifact = download.json
    expect(artifact).toMatchObject({
      format: "authservice.user-export",
      version: 1,
      job_id: res.json.id,
      user: { id: userId },
    })
    expect(artifact.sessions).toHaveLength(6002)
    const bulk = artifact.sessions.filter((s: any) => s.session_id.startsWith("ses_bulk"))
    expect(bulk.map((s: any) => s.device_name)).toEqual(Array.from({ length: 6000 }, (_, i) => `Browser ${i + 1}`))
    expect(download.text).not.toContain("IPHASH0000")
  })

  it("the download is 410 export_expired once 15 minutes have passed (TestClock); housekeeping wipes the artifact", async () => {
    const w = await app.bootstrap()
    const { userId } = await seedUser(w)
    const job = (await startExport(w, { environment_id: w.environment_id, target_user_id: userId })).json
    const path = `/v1/user-export-jobs/${job.id}/download`
    await app.advance("14 minutes")
    await app.advance("59 seconds")
    expect((await app.management(path, { key: w.api_key })).status).toBe(200)
    await app.advance("1 second")
    expectProblem(await app.management(path, { key: w.api_key }), 410, "export_expired")
    // The job itself stays readable, with its (now past) expiry.
    expect((await app.management(`/v1/user-export-jobs/${job.id}`, { key: w.api_key })).json).toMatchObject({
      status: "completed",
      download_expires_at: job.download_expires_at,
    })
    // The worker task of the crontab (src/jobs/tasks.ts) runs the purge.
    await app.run(tasks["user_exports_purge"]!({}))
    const [row] = await query<{ artifact_sealed: string | null; artifact_purged_at: Date | null }>(
      app,
      "select artifact_sealed, artifact_purged_at from user_export_jobs where id = $1",
      [job.id],
    )
    expect(row).toMatchObject({ artifact_sealed: null, artifact_purged_at: expect.any(Date) })
    expect(await query(app, "select 1 from user_export_chunks where job_id = $1", [job.id])).toEqual([])
    expectProblem(await app.management(path, { key: w.api_key }), 410, "export_expired")
  })

  it("the purge task is on the worker's crontab", () => {
    expect(crontab.split("\n")).toContain("*/5 * * * * user_exports_purge ?max=1")
  })

  it("purge leaves artifacts still inside their window", async () => {
    const w = await app.bootstrap()
    const { userId } = await seedUser(w)
    const job = (await startExport(w, { environment_id: w.environment_id, target_user_id: userId })).json
    await app.run(purgeExpiredExports)
    expect((await app.management(`/v1/user-export-jobs/${job.id}/download`, { key: w.api_key })).status).toBe(200)
  })

  it("creation and each download are audited (never the artifact)", async () => {
    const w = await app.bootstrap()
    const { userId } = await seedUser(w)
    const res = await startExport(w, { environment_id: w.environment_id, target_user_id: userId })
    await app.management(`/v1/user-export-jobs/${res.json.id}/download`, { key: w.api_key })
    await app.management(`/v1/user-export-jobs/${res.json.id}/download`, { key: w.api_key })
    const created = await workspaceAuditRows(app, w.workspace_id, "user_export_job.created")
    expect(created).toEqual([
      expect.objectContaining({
        actor_type: "api_key",
        subject_type: "user",
        subject_id: userId,
        environment_id: w.environment_id,
        details: { job_id: res.json.id, size_bytes: res.json.size_bytes },
        request_id: res.headers["x-request-id"],
      }),
    ])
    expect(await workspaceAuditRows(app, w.workspace_id, "user_export_job.downloaded")).toHaveLength(2)
  })

  it("a user pending deletion can still be exported", async () => {
    const w = await app.bootstrap()
    const { userId } = await seedUser(w)
    expect(
      (
        await app.management(`/v1/users/${userId}?environment_id=${w.environment_id}`, {
          method: "DELETE",
          key: w.api_key,
        })
      ).status,
    ).toBe(200)
    const res = await startExport(w, { environment_id: w.environment_id, target_user_id: userId })
    expect(res.status).toBe(201)
    const artifact = (await app.management(`/v1/user-export-jobs/${res.json.id}/download`, { key: w.api_key })).json
    expect(artifact.user.status).toBe("pending_deletion")
  })
})

describe("POST /user-export-jobs refusals (nothing created)", () => {
  const jobs = async (environmentId: string) =>
    (await query(app, "select id from user_export_jobs where environment_id = $1", [environmentId])).length

  it("unknown user, a user of another Environment: 404 user_not_found", async () => {
    const w = await app.bootstrap()
    const second = await makeEnvironment(app, w.workspace_id, w.project_id)
    const elsewhere = await app.management(`/v1/users?environment_id=${second}`, {
      method: "POST",
      key: w.api_key,
      body: { email: "else@example.com" },
    })
    expectProblem(
      await startExport(w, { environment_id: w.environment_id, target_user_id: rid("usr") }),
      404,
      "user_not_found",
    )
    expectProblem(
      await startExport(w, { environment_id: w.environment_id, target_user_id: elsewhere.json.id }),
      404,
      "user_not_found",
    )
    expect(await jobs(w.environment_id)).toBe(0)
    expect(await workspaceAuditRows(app, w.workspace_id, "user_export_job.created")).toHaveLength(0)
  })

  it("body shape: 400 invalid_request_body", async () => {
    const { userId } = await seedUser(b)
    for (const body of [
      {},
      { environment_id: b.environment_id },
      { target_user_id: userId },
      { environment_id: b.environment_id, target_user_id: 7 },
      { environment_id: b.environment_id, target_user_id: userId, format: "zip" },
    ]) {
      expectProblem(await startExport(b, body), 400, "invalid_request_body")
    }
    const raw = await app.management("/v1/user-export-jobs", { method: "POST", body: "{not json" })
    expectProblem(raw, 400, "invalid_request_body")
    expect(await jobs(b.environment_id)).toBe(0)
  })

  it("another Workspace's Environment is 404 not_found; workspace_id must match", async () => {
    const other = await app.bootstrap()
    const { userId } = await seedUser(other)
    expectProblem(
      await startExport(b, { environment_id: other.environment_id, target_user_id: userId }),
      404,
      "not_found",
    )
    expectProblem(
      await startExport(b, {
        environment_id: b.environment_id,
        workspace_id: other.workspace_id,
        target_user_id: userId,
      }),
      400,
      "invalid_request",
    )
    expect(await jobs(other.environment_id)).toBe(0)
  })

  it("scopes: :write creates, :read reads and downloads", async () => {
    const { userId } = await seedUser(b)
    const reader = await makeKey(app, { workspaceId: b.workspace_id, scopes: ["user_data_jobs:read"] })
    const writer = await makeKey(app, { workspaceId: b.workspace_id, scopes: ["user_data_jobs:write"] })
    expectProblem(
      await startExport(b, { environment_id: b.environment_id, target_user_id: userId }, { key: reader }),
      403,
      "insufficient_scope",
    )
    const job = await startExport(b, { environment_id: b.environment_id, target_user_id: userId }, { key: writer })
    expect(job.status).toBe(201)
    expectProblem(
      await app.management(`/v1/user-export-jobs/${job.json.id}`, { key: writer }),
      403,
      "insufficient_scope",
    )
    expectProblem(
      await app.management(`/v1/user-export-jobs/${job.json.id}/download`, { key: writer }),
      403,
      "insufficient_scope",
    )
    expect((await app.management(`/v1/user-export-jobs/${job.json.id}/download`, { key: reader })).status).toBe(200)
    expectProblem(
      await app.request(app.config.managementHost, `/v1/user-export-jobs/${job.json.id}/download`),
      401,
      "unauthorized",
    )
  })
})

describe("isolation and idempotency", () => {
  it("another Workspace's export (and its download) is 404 job_not_found; pinned keys reach only their Environment", async () => {
    const w = await app.bootstrap()
    const { userId } = await seedUser(w)
    const job = (await startExport(w, { environment_id: w.environment_id, target_user_id: userId })).json
    expectProblem(await app.management(`/v1/user-export-jobs/${job.id}`), 404, "job_not_found")
    expectProblem(await app.management(`/v1/user-export-jobs/${job.id}/download`), 404, "job_not_found")
    const second = await makeEnvironment(app, w.workspace_id, w.project_id)
    const pinned = await makeKey(app, {
      workspaceId: w.workspace_id,
      environmentId: second,
      scopes: ["user_data_jobs:read", "user_data_jobs:write"],
    })
    expectProblem(
      await app.management(`/v1/user-export-jobs/${job.id}/download`, { key: pinned }),
      404,
      "job_not_found",
    )
    expectProblem(
      await startExport(w, { environment_id: w.environment_id, target_user_id: userId }, { key: pinned }),
      404,
      "not_found",
    )
    // An import job id is not an export job.
    expectProblem(await app.management(`/v1/user-import-jobs/${job.id}`, { key: w.api_key }), 404, "job_not_found")
    expect(await workspaceAuditRows(app, w.workspace_id, "user_export_job.downloaded")).toHaveLength(0)
  })

  it("Idempotency-Key replays the first export; concurrent requests with one key make one job", async () => {
    const w = await app.bootstrap()
    const { userId } = await seedUser(w)
    const body = { environment_id: w.environment_id, target_user_id: userId }
    const results = await Promise.all(
      Array.from({ length: 5 }, () => startExport(w, body, { headers: { "idempotency-key": "export-1" } })),
    )
    for (const r of results) expect(r.status).toBe(201)
    expect(new Set(results.map((r) => r.json.id)).size).toBe(1)
    expect(
      (await query(app, "select id from user_export_jobs where environment_id = $1", [w.environment_id])).length,
    ).toBe(1)
  })
})
