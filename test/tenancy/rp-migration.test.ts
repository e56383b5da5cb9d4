import { describe, expect, it } from "vitest"
import { liveLegacyRpId, nextRpState } from "../../src/tenancy/rp-migration.js"

// The passkey RP ID migration: which RP ID is active and which legacy one still signs in, as the
// Interaction Domain moves (spec: Domain, Environment `rp_id`, rp-migration). Over HTTP:
// test/management/domains/domains.test.ts, test/management/environments/environments.test.ts
// (disable-legacy) and test/passkeys/.

describe("the RP ID follows THE Interaction Domain", () => {
  const fresh = { activeRpId: "env-x.login.example.net", legacyRpId: null, legacyRpDisabledAt: null }

  it("a new Interaction Domain becomes the active RP ID and the previous one, still served, the legacy one", () => {
    expect(nextRpState(fresh, "login.example.com", true)).toEqual({
      activeRpId: "login.example.com",
      legacyRpId: "env-x.login.example.net",
      legacyRpDisabledAt: null,
    })
    const disabled = {
      activeRpId: "a.example.com",
      legacyRpId: "env-x.login.example.net",
      legacyRpDisabledAt: new Date(0),
    }
    expect(nextRpState(disabled, "b.example.com", true)).toEqual({
      activeRpId: "b.example.com",
      legacyRpId: "a.example.com",
      legacyRpDisabledAt: null,
    })
  })

  it("nothing moves when the Interaction Domain is already the active RP ID", () => {
    expect(nextRpState(fresh, "env-x.login.example.net", true)).toBeUndefined()
  })

  it("when the active RP ID's domain is gone, the new host takes over and stops being legacy", () => {
    const migrated = {
      activeRpId: "login.example.com",
      legacyRpId: "env-x.login.example.net",
      legacyRpDisabledAt: null,
    }
    expect(nextRpState(migrated, "env-x.login.example.net", false)).toEqual({
      activeRpId: "env-x.login.example.net",
      legacyRpId: null,
      legacyRpDisabledAt: null,
    })
    const other = { activeRpId: "two.example.com", legacyRpId: "one.example.com", legacyRpDisabledAt: new Date(5) }
    expect(nextRpState(other, "env-x.login.example.net", false)).toEqual({
      activeRpId: "env-x.login.example.net",
      legacyRpId: "one.example.com",
      legacyRpDisabledAt: new Date(5),
    })
  })
})

describe("the legacy RP ID signs in until disable-legacy", () => {
  const env = (legacyRpId: string | null, legacyRpDisabledAt: Date | null) => ({ legacyRpId, legacyRpDisabledAt })

  it("is the legacy RP ID while it is not disabled", () => {
    expect(liveLegacyRpId(env("env-x.login.example.net", null))).toBe("env-x.login.example.net")
  })

  it("is none once disabled, and none when no migration happened", () => {
    expect(liveLegacyRpId(env("env-x.login.example.net", new Date(0)))).toBeUndefined()
    expect(liveLegacyRpId(env(null, null))).toBeUndefined()
  })
})
