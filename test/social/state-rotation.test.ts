import { randomBytes } from "node:crypto"
import { describe, expect, it } from "vitest"
import { makeCrypto } from "../../src/platform/crypto.js"
import { signState, verifyState } from "../../src/social/state.js"

// docs/master-key-rotation.md: a social login state (minutes long) signed under the old master
// key just before the switch still verifies while that key is MASTER_KEY_PREVIOUS.
describe("social login state across a master-key rotation", () => {
  it("signed under the old key: accepted with it as the previous key, refused once it is gone", () => {
    const [a, b] = [randomBytes(32), randomBytes(32)]
    const reference = randomBytes(32).toString("base64url")
    const now = Date.now()
    const state = signState(makeCrypto({ current: a }), "env_x", reference, now + 60_000)
    expect(verifyState(makeCrypto({ current: b, previous: a }), "env_x", state, now)).toEqual({ ok: true, reference })
    expect(verifyState(makeCrypto({ current: b }), "env_x", state, now)).toEqual({ ok: false, reason: "bad_signature" })
    expect(verifyState(makeCrypto({ current: b, previous: a }), "env_y", state, now)).toEqual({
      ok: false,
      reason: "bad_signature",
    })
  })

  it("signed by a process holding both keys before the switch: a process holding the old key alone accepts it; after the switch, both directions", () => {
    const [a, b] = [randomBytes(32), randomBytes(32)]
    const reference = randomBytes(32).toString("base64url")
    const now = Date.now()
    const restarted = makeCrypto({ current: b, previous: a })
    const notRestarted = makeCrypto({ current: a })
    expect(verifyState(notRestarted, "env_x", signState(restarted, "env_x", reference, now + 60_000), now)).toEqual({
      ok: true,
      reference,
    })
    // Switched: one process has switched, another holding both keys not yet; each accepts the other's.
    const switched = makeCrypto({ current: b, previous: a })
    switched.sealUnderMasterKey()
    expect(verifyState(restarted, "env_x", signState(switched, "env_x", reference, now + 60_000), now)).toEqual({
      ok: true,
      reference,
    })
    expect(verifyState(switched, "env_x", signState(restarted, "env_x", reference, now + 60_000), now)).toEqual({
      ok: true,
      reference,
    })
  })
})
