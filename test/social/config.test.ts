import { describe, expect, it } from "vitest"
import { parseConfig } from "../../src/platform/config.js"

// SOCIAL_PROVIDER_HOSTS: a development and test switch (src/platform/config.ts).

const base = { MASTER_KEY: Buffer.alloc(32, 7).toString("base64url") }

describe("SOCIAL_PROVIDER_HOSTS", () => {
  it("parses host=address:port pairs (IPv4 and bracketed IPv6)", () => {
    const config = parseConfig({
      ...base,
      SOCIAL_PROVIDER_HOSTS: "accounts.google.com=127.0.0.1:8443, api.github.com=[::1]:9443",
    })
    expect([...config.socialProviderHosts]).toEqual([
      ["accounts.google.com", { address: "127.0.0.1", port: 8443 }],
      ["api.github.com", { address: "::1", port: 9443 }],
    ])
    expect(parseConfig(base).socialProviderHosts.size).toBe(0)
  })

  it("refuses malformed entries and any use in production, naming the variable", () => {
    expect(() => parseConfig({ ...base, SOCIAL_PROVIDER_HOSTS: "accounts.google.com" })).toThrow(
      /SOCIAL_PROVIDER_HOSTS/,
    )
    expect(() => parseConfig({ ...base, SOCIAL_PROVIDER_HOSTS: "a.example=127.0.0.1:99999" })).toThrow(
      /SOCIAL_PROVIDER_HOSTS/,
    )
    expect(() =>
      parseConfig({
        ...base,
        NODE_ENV: "production",
        DATABASE_URL: "postgres://db.example/auth",
        SOCIAL_PROVIDER_HOSTS: "accounts.google.com=127.0.0.1:8443",
      }),
    ).toThrow(/SOCIAL_PROVIDER_HOSTS is refused when NODE_ENV=production/)
  })
})
