import { Effect, Layer } from "effect"
import { describe, expect, it } from "vitest"
import { DnsLookupFailed, DnsResolver } from "../../src/management/domains/dns.js"
import { hostnameProblem } from "../../src/management/domains/hostname.js"
import { nextRpState } from "../../src/management/domains/rp.js"
import { validationErrors } from "../../src/management/domains/validation.js"
import { parseConfig } from "../../src/platform/config.js"

/** A resolver layer answering from a table: the injection point the HTTP tests reach through DNS_SERVERS. */
const fakeDns = (answers: Record<string, ReadonlyArray<string> | "fail">) => Layer.succeed(DnsResolver, DnsResolver.of({
  resolveTxt: (name) => {
    const answer = answers[name]
    return answer === "fail" ? Effect.fail(new DnsLookupFailed({ name, reason: "ETIMEOUT" })) : Effect.succeed(answer ?? [])
  },
}))

const domain = { hostname: "login.example.com", verification_token: "authservice-verification=abc" }
const run = (answers: Record<string, ReadonlyArray<string> | "fail">) =>
  Effect.runPromise(validationErrors(domain).pipe(Effect.provide(fakeDns(answers))))

describe("domain validation through an injected resolver", () => {
  it("is valid when a TXT record at _authservice-challenge.<hostname> equals the token", async () => {
    expect(await run({ "_authservice-challenge.login.example.com": ["x", " authservice-verification=abc "] })).toEqual([])
  })

  it("explains a missing record, a wrong record and a failed lookup", async () => {
    expect(await run({})).toEqual([
      "No TXT record found at _authservice-challenge.login.example.com; publish one with the value authservice-verification=abc",
    ])
    expect(await run({ "_authservice-challenge.login.example.com": ["authservice-verification=abd"] })).toEqual([
      "The TXT records at _authservice-challenge.login.example.com do not contain the verification value authservice-verification=abc",
    ])
    // A record on the hostname itself does not count: only the challenge name does.
    expect(await run({ "login.example.com": ["authservice-verification=abc"] })).toHaveLength(1)
    expect(await run({ "_authservice-challenge.login.example.com": "fail" })).toEqual([
      "The DNS lookup of _authservice-challenge.login.example.com (TXT) failed (ETIMEOUT); retry the validation later",
    ])
  })
})

describe("the RP ID follows THE Interaction Domain", () => {
  const fresh = { activeRpId: "env-x.login.example.net", legacyRpId: null, legacyRpDisabledAt: null }

  it("a new Interaction Domain becomes the active RP ID and the previous one, still served, the legacy one", () => {
    expect(nextRpState(fresh, "login.example.com", true)).toEqual({
      activeRpId: "login.example.com", legacyRpId: "env-x.login.example.net", legacyRpDisabledAt: null,
    })
    const disabled = { activeRpId: "a.example.com", legacyRpId: "env-x.login.example.net", legacyRpDisabledAt: new Date(0) }
    expect(nextRpState(disabled, "b.example.com", true)).toEqual({ activeRpId: "b.example.com", legacyRpId: "a.example.com", legacyRpDisabledAt: null })
  })

  it("nothing moves when the Interaction Domain is already the active RP ID", () => {
    expect(nextRpState(fresh, "env-x.login.example.net", true)).toBeUndefined()
  })

  it("when the active RP ID's domain is gone, the new host takes over and stops being legacy", () => {
    const migrated = { activeRpId: "login.example.com", legacyRpId: "env-x.login.example.net", legacyRpDisabledAt: null }
    expect(nextRpState(migrated, "env-x.login.example.net", false)).toEqual({
      activeRpId: "env-x.login.example.net", legacyRpId: null, legacyRpDisabledAt: null,
    })
    const other = { activeRpId: "two.example.com", legacyRpId: "one.example.com", legacyRpDisabledAt: new Date(5) }
    expect(nextRpState(other, "env-x.login.example.net", false)).toEqual({
      activeRpId: "env-x.login.example.net", legacyRpId: "one.example.com", legacyRpDisabledAt: new Date(5),
    })
  })
})

describe("custom domain hostnames", () => {
  const config = parseConfig({ PORT: "8443", PLATFORM_DOMAIN: "auth.example.net", CANONICAL_ISSUER_HOST: "id.example.org:8443", MANAGEMENT_HOST: "api.example.org:8443" })

  it("accepts public DNS names", () => {
    for (const h of ["login.example.com", "a.b.c.example.co.uk", "xn--bcher-kva.example", "1login.example.com"]) {
      expect(hostnameProblem(config, h)).toBeUndefined()
    }
  })

  it("refuses the platform's own hosts and the platform domain's subdomains", () => {
    expect(hostnameProblem(config, "id.example.org")).toBe("must not be one of the platform's own hosts")
    expect(hostnameProblem(config, "api.example.org")).toBe("must not be one of the platform's own hosts")
    expect(hostnameProblem(config, "auth.example.net")).toMatch(/platform domain/)
    expect(hostnameProblem(config, "x.login.auth.example.net")).toMatch(/platform domain/)
    expect(hostnameProblem(config, "notauth.example.net")).toBeUndefined()
  })
})
