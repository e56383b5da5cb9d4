import { describe, expect, it } from "vitest"
import { clientIp, normalizeIp, parseTrustProxy, type TrustProxy } from "../../src/platform/trust-proxy.js"

const parse = (raw: string | undefined) => {
  const parsed = parseTrustProxy(raw)
  if (typeof parsed === "string") throw new Error(parsed)
  return parsed
}

describe("TRUST_PROXY parsing", () => {
  it("unset, empty, false and 0 trust nothing", () => {
    for (const raw of [undefined, "", "false", "0", "off"]) expect(parse(raw)).toEqual({ kind: "none" })
  })

  it("a whole number is a hop count", () => {
    expect(parse("2")).toEqual({ kind: "hops", hops: 2 })
    expect(parseTrustProxy("33")).toBe("TRUST_PROXY hop count must be 1 to 32")
  })

  it("a list of addresses and CIDR blocks (IPv4 and IPv6)", () => {
    const t = parse("10.0.0.0/8, 192.168.1.7 ,fd00::/8")
    expect(t.kind === "cidrs" && t.cidrs).toEqual(["10.0.0.0/8", "192.168.1.7/32", "fd00::/8"])
  })

  it("refuses true (the old meaning trusted the client's own entry) and malformed entries", () => {
    expect(parseTrustProxy("true")).toMatch(/^TRUST_PROXY must be the number of proxies/)
    for (const bad of ["10.0.0.0/33", "fd00::/129", "10.0.0/8", "proxy.internal", "10.0.0.0/8/1", "1.2.3.4/x"]) {
      expect(parseTrustProxy(bad)).toMatch(/^TRUST_PROXY entry /)
    }
  })
})

describe("client IP", () => {
  const none: TrustProxy = { kind: "none" }

  it("without TRUST_PROXY the socket peer is the client, whatever X-Forwarded-For says", () => {
    expect(clientIp(none, "203.0.113.5", "1.1.1.1")).toBe("203.0.113.5")
    expect(clientIp(none, "::ffff:203.0.113.5", undefined)).toBe("203.0.113.5")
  })

  it("one hop: the entry the proxy appended (rightmost), never the leftmost the client wrote", () => {
    const one = parse("1")
    expect(clientIp(one, "10.0.0.2", "6.6.6.6, 198.51.100.7")).toBe("198.51.100.7")
    expect(clientIp(one, "10.0.0.2", "198.51.100.7")).toBe("198.51.100.7")
    expect(clientIp(one, "10.0.0.2", undefined)).toBe("10.0.0.2")
  })

  it("two hops: the entry the farther proxy appended", () => {
    const two = parse("2")
    expect(clientIp(two, "10.0.0.2", "6.6.6.6, 198.51.100.7, 10.0.0.9")).toBe("198.51.100.7")
    // fewer entries than hops: the leftmost there is
    expect(clientIp(two, "10.0.0.2", "198.51.100.7")).toBe("198.51.100.7")
  })

  it("CIDRs: walks from the right past trusted proxies to the first untrusted address", () => {
    const cidrs = parse("10.0.0.0/8,fd00::/8")
    expect(clientIp(cidrs, "10.0.0.2", "6.6.6.6, 198.51.100.7, 10.1.2.3")).toBe("198.51.100.7")
    expect(clientIp(cidrs, "fd00::1", "2001:db8::1")).toBe("2001:db8::1")
    expect(clientIp(cidrs, "::ffff:10.0.0.2", "198.51.100.7")).toBe("198.51.100.7")
    // a peer that is not a trusted proxy is the client: its X-Forwarded-For is ignored
    expect(clientIp(cidrs, "203.0.113.5", "198.51.100.7")).toBe("203.0.113.5")
    // an untrusted address in the middle stops the walk there
    expect(clientIp(cidrs, "10.0.0.2", "10.9.9.9, 198.51.100.7")).toBe("198.51.100.7")
  })

  it("a garbled entry a trusted proxy handed over stops the walk at the last good address", () => {
    expect(clientIp(parse("1"), "10.0.0.2", "1.1.1.1, not-an-ip")).toBe("10.0.0.2")
    expect(clientIp(parse("2"), "10.0.0.2", "not-an-ip, 198.51.100.7")).toBe("198.51.100.7")
  })

  it("entries may carry a port or brackets", () => {
    expect(normalizeIp("198.51.100.7:4711")).toBe("198.51.100.7")
    expect(normalizeIp("[2001:DB8::1]:443")).toBe("2001:db8::1")
    expect(normalizeIp("::ffff:198.51.100.7")).toBe("198.51.100.7")
    expect(normalizeIp("unknown")).toBeUndefined()
  })
})
