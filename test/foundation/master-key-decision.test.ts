import { describe, expect, it } from "vitest"
import { keyCheckDecision, type KeyCheckRow } from "../../src/platform/master-key.js"

// The key check at start (src/platform/master-key.ts), as a pure function: which processes may
// start in each state of a master-key rotation, and which key a process holding both writes under
// (docs/master-key-rotation.md: expand, switch, contract).

const [A, B, C] = ["check-A", "check-B", "check-C"]
const NOW = Date.parse("2030-01-01T00:00:00Z")
const decide = (row: KeyCheckRow, current: string, previous?: string, nowMs = NOW) => {
  const d = keyCheckDecision(row, current, previous, { nowMs })
  return d.kind === "ready" ? d.sealWith : d.message
}
const steady: KeyCheckRow = { check_value: A, previous_check_value: null, old_key_needed_until: null }
const switched: KeyCheckRow = { check_value: B, previous_check_value: A, old_key_needed_until: null }
const completed: KeyCheckRow = {
  check_value: B,
  previous_check_value: null,
  old_key_needed_until: new Date(NOW + 60_000),
}

describe("the key check at start, through a rotation from A to B", () => {
  it("expand (the database on A): the old key alone and both keys start; both keys write under the old one; the new key alone is refused", () => {
    expect(decide(steady, A)).toBe("master-key")
    expect(decide(steady, B, A)).toBe("previous-key")
    expect(decide(steady, B)).toMatch(/^MASTER_KEY does not match the key this database was created with/)
  })

  it("switched: both keys write under the new one at once; the old key alone, the keys swapped, another key and the new key alone are refused", () => {
    expect(decide(switched, B, A)).toBe("master-key")
    expect(decide(switched, A)).toMatch(/^A master-key rotation away from this MASTER_KEY has switched to the new key/)
    expect(decide(switched, A, B)).toMatch(/^The database has switched to the key given as MASTER_KEY_PREVIOUS/)
    expect(decide(switched, C, B)).toMatch(/^An earlier master-key rotation is not finished/)
    expect(decide(switched, B)).toMatch(/^A master-key rotation is not finished/)
    expect(decide(switched, B, C)).toMatch(/^A master-key rotation is not finished/)
  })

  it("completed: both keys start; the new key alone only from old_key_needed_until on; the old key alone never", () => {
    expect(decide(completed, B, A)).toBe("master-key")
    expect(decide(completed, B, A, NOW + 120_000)).toBe("master-key")
    expect(decide(completed, B)).toBe(
      `The master-key rotation completed, but Email OTP codes and social login states made under the old key verify only with it until ${new Date(NOW + 60_000).toISOString()}: keep MASTER_KEY_PREVIOUS set to the old key until then (step 4)`,
    )
    expect(decide(completed, B, undefined, NOW + 59_999)).toMatch(/^The master-key rotation completed/)
    expect(decide(completed, B, undefined, NOW + 60_000)).toBe("master-key")
    expect(decide(completed, A)).toMatch(/^MASTER_KEY does not match/)
    // The next rotation's expand, from B to C.
    expect(decide(completed, C, B, NOW + 60_000)).toBe("previous-key")
  })
})
