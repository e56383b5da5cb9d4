import { describe, expect, it } from "vitest"
import { parseConfig } from "../../src/platform/config.js"
import { ConfigInvalid } from "../../src/platform/config-invalid.js"

const KEY = Buffer.alloc(32, 7).toString("base64url")
const refuse = (env: Record<string, string>, message: RegExp) => {
  let error: unknown
  try {
    parseConfig(env)
  } catch (e) {
    error = e
  }
  expect(error).toBeInstanceOf(ConfigInvalid)
  expect((error as ConfigInvalid).message).toMatch(message)
  expect((error as ConfigInvalid).message).not.toContain("\n")
}

describe("configuration", () => {
  it("has the run contract's defaults", () => {
    const c = parseConfig({})
    expect(c.port).toBe(3000)
    expect(c.dataDir).toBe("./.data")
    expect(c.platformDomain).toBe("localhost")
    expect(c.canonicalIssuerHost).toBe("localhost:3000")
    expect(c.managementHost).toBe("api.localhost:3000")
    expect(c.publicScheme).toBe("http")
    expect(c.trustProxy).toEqual({ kind: "none" })
    expect(c.webhookAllowPrivateTargets).toBe(false)
    expect(c.smtpUrl).toBeUndefined()
    expect(c.listenHost).toBe("127.0.0.1")
  })

  it("DATABASE_CONNECT_TIMEOUT_MS and DATABASE_STATEMENT_TIMEOUT_MS: 5 s and 15 s unless set, positive integers", () => {
    expect([parseConfig({}).databaseConnectTimeoutMs, parseConfig({}).databaseStatementTimeoutMs]).toEqual([
      5_000, 15_000,
    ])
    const set = parseConfig({ DATABASE_CONNECT_TIMEOUT_MS: "2000", DATABASE_STATEMENT_TIMEOUT_MS: "3000" })
    expect([set.databaseConnectTimeoutMs, set.databaseStatementTimeoutMs]).toEqual([2_000, 3_000])
    refuse({ DATABASE_STATEMENT_TIMEOUT_MS: "0" }, /^DATABASE_STATEMENT_TIMEOUT_MS must be a positive integer/)
    refuse({ DATABASE_CONNECT_TIMEOUT_MS: "5s" }, /^DATABASE_CONNECT_TIMEOUT_MS must be a positive integer/)
  })

  it("HOST: loopback in development, every interface in production unless set", () => {
    expect(parseConfig({ HOST: "0.0.0.0" }).listenHost).toBe("0.0.0.0")
    expect(parseConfig({ HOST: "::" }).listenHost).toBe("::")
    const production = {
      NODE_ENV: "production",
      DATABASE_URL: "postgres://db.example/auth",
      MASTER_KEY: KEY,
      PLATFORM_DOMAIN: "a.example",
      CANONICAL_ISSUER_HOST: "b.example",
      MANAGEMENT_HOST: "c.example",
    }
    expect(parseConfig(production).listenHost).toBeUndefined()
    expect(parseConfig({ ...production, HOST: "10.0.0.5" }).listenHost).toBe("10.0.0.5")
    refuse({ HOST: "not a host" }, /^HOST must be an IP address/)
  })

  it("derives hosts from PORT and uses https for non-local hosts", () => {
    expect(parseConfig({ PORT: "8080" }).canonicalIssuerHost).toBe("localhost:8080")
    const c = parseConfig({
      PLATFORM_DOMAIN: "auth.example.com",
      CANONICAL_ISSUER_HOST: "id.example.com",
      MANAGEMENT_HOST: "api.example.com",
    })
    expect(c.publicScheme).toBe("https")
  })

  it("LOG_LEVEL and the OTel SDK's variables: defaults, values, refusals", () => {
    const defaults = parseConfig({})
    expect([defaults.logLevel, defaults.otlpProtocol, defaults.otelResource]).toEqual([
      "info",
      "http/protobuf",
      { "service.name": "authservice" },
    ])
    expect(parseConfig({ LOG_LEVEL: "WARN" }).logLevel).toBe("warn")
    refuse({ LOG_LEVEL: "verbose" }, /^LOG_LEVEL must be one of debug, info, warn, error \(got "verbose"\)$/)
    // The traces' own protocol variable wins over the general one.
    expect(
      parseConfig({ OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/protobuf" })
        .otlpProtocol,
    ).toBe("http/protobuf")
    expect(parseConfig({ OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" }).otlpProtocol).toBe("http/json")
    refuse({ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }, /^OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported: .*4318/)
    refuse({ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "thrift" }, /^OTEL_EXPORTER_OTLP_TRACES_PROTOCOL must be/)
    // Resource attributes: percent-decoded; OTEL_SERVICE_NAME wins over a service.name among them.
    expect(
      parseConfig({ OTEL_RESOURCE_ATTRIBUTES: "service.name=a, deployment.environment.name=prod,team=auth%2Cid" })
        .otelResource,
    ).toEqual({ "service.name": "a", "deployment.environment.name": "prod", team: "auth,id" })
    expect(
      parseConfig({ OTEL_RESOURCE_ATTRIBUTES: "service.name=a", OTEL_SERVICE_NAME: "b" }).otelResource["service.name"],
    ).toBe("b")
    refuse({ OTEL_RESOURCE_ATTRIBUTES: "novalue" }, /^OTEL_RESOURCE_ATTRIBUTES must be key=value pairs/)
    refuse({ OTEL_RESOURCE_ATTRIBUTES: "a=%zz" }, /^OTEL_RESOURCE_ATTRIBUTES must be key=value pairs/)
  })

  it("DNS_SERVERS: the system's resolvers unless set; ip, ip:port or [ipv6]:port, else refused naming it", () => {
    expect(parseConfig({}).dnsServers).toEqual([])
    expect(parseConfig({ DNS_SERVERS: " 10.0.0.53, 127.0.0.1:5353 ,, ::1,[fd00::53]:53 " }).dnsServers).toEqual([
      "10.0.0.53",
      "127.0.0.1:5353",
      "::1",
      "[fd00::53]:53",
    ])
    for (const bad of ["dns.example.com", "10.0.0.53:", "10.0.0.53:0", "10.0.0.53:70000", "[fd00::53]", "300.1.1.1"])
      refuse({ DNS_SERVERS: `10.0.0.1,${bad}` }, /^DNS_SERVERS must list resolvers/)
  })

  it("refuses bad values with one line naming the variable", () => {
    refuse({ PORT: "abc" }, /^PORT /)
    refuse({ PORT: "70000" }, /^PORT /)
    refuse({ DATABASE_URL: "mysql://x" }, /^DATABASE_URL /)
    refuse({ DATABASE_URL: "postgres://x/y" }, /^MASTER_KEY is required when DATABASE_URL/)
    refuse(
      { NODE_ENV: "production" },
      /^DATABASE_URL is required when NODE_ENV=production \(embedded Postgres is for development only\)/,
    )
    refuse({ NODE_ENV: "production", MASTER_KEY: KEY }, /^DATABASE_URL is required when NODE_ENV=production/)
    refuse(
      { NODE_ENV: "production", DATABASE_URL: "postgres://db/auth" },
      /^MASTER_KEY is required when NODE_ENV=production/,
    )
    refuse({ MASTER_KEY: "short" }, /^MASTER_KEY must be 32 bytes/)
    // One alphabet per key: base64url without padding, or standard base64 with it (openssl rand -base64 32).
    const bytes = Buffer.from(Array.from({ length: 32 }, (_, i) => 250 - i))
    expect(Buffer.from(parseConfig({ MASTER_KEY: bytes.toString("base64") }).masterKey!)).toEqual(bytes)
    expect(Buffer.from(parseConfig({ MASTER_KEY: bytes.toString("base64url") }).masterKey!)).toEqual(bytes)
    expect(bytes.toString("base64")).toMatch(/[+/]/)
    refuse({ MASTER_KEY: bytes.toString("base64").replace("=", "") }, /openssl rand -base64 32/)
    refuse({ MASTER_KEY: `${bytes.toString("base64url")}=` }, /^MASTER_KEY must be 32 bytes/)
    refuse({ PUBLIC_SCHEME: "ftp" }, /^PUBLIC_SCHEME /)
    refuse({ PUBLIC_SCHEME: "http", CANONICAL_ISSUER_HOST: "id.example.com" }, /PUBLIC_SCHEME=http is only allowed/)
    refuse({ TRUST_PROXY: "maybe" }, /^TRUST_PROXY /)
    refuse({ TRUST_PROXY: "true" }, /^TRUST_PROXY must be the number of proxies/)
    refuse({ TRUST_PROXY: "10.0.0.0/33" }, /^TRUST_PROXY entry "10.0.0.0\/33"/)
    refuse({ PLATFORM_DOMAIN: "exa mple" }, /^PLATFORM_DOMAIN /)
    refuse({ PLATFORM_DOMAIN: "example.com:80" }, /^PLATFORM_DOMAIN must not carry a port/)
    refuse(
      {
        NODE_ENV: "production",
        MASTER_KEY: KEY,
        DATABASE_URL: "postgres://db/auth",
        WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
        PLATFORM_DOMAIN: "a.example",
        CANONICAL_ISSUER_HOST: "b.example",
        MANAGEMENT_HOST: "c.example",
      },
      /WEBHOOK_ALLOW_PRIVATE_TARGETS is refused when NODE_ENV=production/,
    )
    refuse({ RATE_LIMIT_IP_PER_MINUTE: "0" }, /^RATE_LIMIT_IP_PER_MINUTE /)
    // A "no limit" of 99999999999 would overflow the counter row (a Postgres integer) and fail
    // every window counted in the same statement: refused with the bound.
    refuse(
      { RATE_LIMIT_TOKEN_CEILING_PER_MINUTE: "99999999999" },
      /^RATE_LIMIT_TOKEN_CEILING_PER_MINUTE must be at most 1000000000 /,
    )
    expect(parseConfig({ RATE_LIMIT_TOKEN_CEILING_PER_MINUTE: "1000000000" }).rateLimits.tokenCeilingPerMinute).toBe(
      1_000_000_000,
    )
    refuse({ SMTP_URL: "http://x" }, /^SMTP_URL /)
  })

  it("accepts a production configuration", () => {
    const c = parseConfig({
      NODE_ENV: "production",
      MASTER_KEY: KEY,
      DATABASE_URL: "postgres://db/auth",
      PLATFORM_DOMAIN: "auth.example.com",
      CANONICAL_ISSUER_HOST: "id.example.com",
      MANAGEMENT_HOST: "api.example.com",
    })
    expect(c.production).toBe(true)
    expect(c.masterKey?.length).toBe(32)
  })
})
