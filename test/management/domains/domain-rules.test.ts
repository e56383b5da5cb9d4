import { Effect, Layer } from "effect"
import { describe, expect, it } from "vitest"
import { DnsLookupFailed, DnsResolver } from "../../../src/management/domains/dns.js"
import { hostnameProblem } from "../../../src/management/domains/hostname.js"
import { validationErrors } from "../../../src/management/domains/validation.js"
import { parseConfig } from "../../../src/platform/config.js"

/** A resolver layer answering from a table: the injection point the HTTP tests reach through DNS_SERVERS. */
const fakeDns = (answers: Record<string, ReadonlyArray<string> | "fail">) =>
  Layer.succeed(
    DnsResolver,
    DnsResolver.of({
      resolveTxt: (name) => {
        const answer = answers[name]
        return answer === "fail"
          ? Effect.fail(new DnsLookupFailed({ name, reason: "ETIMEOUT" }))
          : Effect.succeed(answer ?? [])
      },
    }),
  )

const domain = { hostname: "login.example.com", verification_token: "authservice-verification=abc" }
const run = (answers: Record<string, ReadonlyArray<string> | "fail">) =>
  Effect.runPromise(validationErrors(domain).pipe(Effect.provide(fakeDns(answers))))

describe("domain validation through an injected resolver", () => {
  it("is valid when a TXT record at _authservice-challenge.<hostname> equals the token", async () => {
    expect(await run({ "_authservice-challenge.login.example.com": ["x", " authservice-verification=abc "] })).toEqual(
      [],
    )
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

describe("custom domain hostnames", () => {
  const config = parseConfig({
    PORT: "8443",
    PLATFORM_DOMAIN: "auth.example.net",
    CANONICAL_ISSUER_HOST: "id.example.org:8443",
    MANAGEMENT_HOST: "api.example.org:8443",
  })

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
