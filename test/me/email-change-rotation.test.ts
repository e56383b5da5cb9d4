import { randomBytes } from "node:crypto"
import { afterAll, describe, expect, it } from "vitest"
import { rotateMasterKey } from "../../src/operator/master-key/service.js"
import { startSmtpSink } from "../login/support.js"
import { registerClient } from "../passkeys/support/flow.js"
import { type TestApp, startApp } from "../support/app.js"
import { me, type MeContext, signedInUser, uniqueEmail } from "./support.js"

// An email-change code is HMAC'd under the master key, like an Email OTP code, and cannot be
// re-keyed (docs/master-key-rotation.md): one sent by a process before the switch of a rotation
// must still verify, for its 5 minutes, on a process that has switched to the new key.

const A = randomBytes(32).toString("base64url")
const B = randomBytes(32).toString("base64url")

let smtp: Awaited<ReturnType<typeof startSmtpSink>> | undefined
let app: TestApp | undefined
afterAll(async () => {
  await app?.close()
  await smtp?.close()
})

/** Waits (real time: the worker polls) for the n-th message to `to`; returns its code. */
const codeOf = async (to: string, nth: number) => {
  const deadline = Date.now() + 15_000
  for (;;) {
    const mine = smtp!.messagesTo(to)
    if (mine.length >= nth) return /confirmation code is (\d{6})/.exec(mine[nth - 1]!.raw.replace(/=\r?\n/g, ""))![1]!
    if (Date.now() > deadline) throw new Error(`no message #${nth} to ${to}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

describe("email-change codes across the switch of a master-key rotation", () => {
  it("a code sent before the switch (HMAC under the old key) verifies after it; the next stage's code (new key) too", async () => {
    smtp = await startSmtpSink()
    // The database is created under A; then the service runs with both keys (sealing under A).
    const created = await startApp({ env: { MASTER_KEY: A } })
    await created.close()
    app = await startApp({
      databaseUrl: created.databaseUrl,
      worker: true,
      env: { MASTER_KEY: B, MASTER_KEY_PREVIOUS: A, SMTP_URL: smtp.url },
    })
    const b = await app.bootstrap()
    const ctx: MeContext = { app, b, client: await registerClient(app, b) }
    const { user, token } = await signedInUser(ctx, "rotation")
    const newEmail = uniqueEmail("rotation-new")
    const started = await me(ctx, token, "/email/change/start", { body: { new_email: newEmail } })
    expect(started.status, started.text).toBe(202)
    const oldCode = await codeOf(user.email, 1)

    // The switch (and the re-sealing): this process now makes HMACs under B.
    const report = await app.run(rotateMasterKey({ batchSize: 100, acknowledgementTimeoutMs: 1000 }))
    expect(report.completed).toBe(true)

    const old = await me(ctx, token, "/email/change/verify-old", {
      body: { challenge_id: started.json.challenge_id, code: oldCode },
    })
    expect(old.status, old.text).toBe(202)
    const verified = await me(ctx, token, "/email/change/verify-new", {
      body: { challenge_id: old.json.challenge_id, code: await codeOf(newEmail, 1) },
    })
    expect(verified.status, verified.text).toBe(200)
  }, 60_000)
})
