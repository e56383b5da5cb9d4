import { describe, expect, it } from "vitest"
import { isBlockedAddress } from "../../src/platform/outbound/blocked-addresses.js"
import { checkWebhookUrl, type UrlRefusal } from "../../src/platform/outbound/url-policy.js"

// Spec, Events, Subscription rule 2: HTTPS, no userinfo, no fragment, no localhost-type host,
// no blocked IP literal (every IPv4 and IPv6 range listed, plus 64:ff9b::/96, 2002::/16,
// 2001::/32 and ::a.b.c.d per docs/architecture.md), after WHATWG normalisation of numeric hosts.

const table: ReadonlyArray<readonly [url: string, expected: "ok" | UrlRefusal]> = [
  // accepted
  ["https://example.com/webhooks", "ok"],
  ["https://hooks.example.com:8443/in?token=abc", "ok"],
  ["https://EXAMPLE.com/Path", "ok"],
  ["https://xn--n3h.example/", "ok"],
  ["https://☃.example/", "ok"],
  ["https://8.8.8.8/", "ok"],
  ["https://1.1.1.1:443/x", "ok"],
  ["https://[2606:4700:4700::1111]/", "ok"],
  ["https://[::ffff:8.8.8.8]/", "ok"], // IPv4-mapped public address
  ["https://172.32.0.1/", "ok"], // just outside 172.16/12
  ["https://100.128.0.1/", "ok"], // just outside CGNAT
  ["https://192.0.1.1/", "ok"], // just outside 192.0.0.0/24
  ["https://198.20.0.1/", "ok"], // just outside benchmarking 198.18/15
  ["https://223.255.255.255/", "ok"], // just below multicast
  ["https://intranet-is-checked-at-connect.example/", "ok"], // DNS is not resolved at registration
  // scheme
  ["http://example.com/webhooks", "scheme_not_https"],
  ["ftp://example.com/", "scheme_not_https"],
  ["ws://example.com/", "scheme_not_https"],
  ["javascript:alert(1)", "scheme_not_https"],
  ["file:///etc/passwd", "scheme_not_https"],
  // shape
  ["example.com/webhooks", "invalid_url"],
  ["/relative", "invalid_url"],
  ["https://", "invalid_url"],
  ["https://exa mple.com/", "invalid_url"],
  [" https://example.com/", "invalid_url"],
  ["https://example.com/\n", "invalid_url"],
  ["https://1.2.3.4.5/", "invalid_url"],
  [`https://example.com/${"a".repeat(2100)}`, "too_long"],
  // userinfo
  ["https://user:pass@example.com/", "userinfo"],
  ["https://user@example.com/", "userinfo"],
  ["https://:pass@example.com/", "userinfo"],
  ["https://@example.com/", "userinfo"],
  ["https://example.com@127.0.0.1/", "userinfo"],
  // fragment
  ["https://example.com/hook#frag", "fragment"],
  ["https://example.com/hook#", "fragment"],
  // localhost-type names
  ["https://localhost/", "localhost"],
  ["https://LOCALHOST:8443/", "localhost"],
  ["https://localhost./", "localhost"],
  ["https://api.localhost/", "localhost"],
  ["https://a.b.localhost/", "localhost"],
  ["https://localhost.localdomain/", "localhost"],
  ["https://ip6-localhost/", "localhost"],
  // IPv4: every blocked range of the spec
  ["https://0.0.0.0/", "blocked_ip"],
  ["https://0.1.2.3/", "blocked_ip"],
  ["https://10.0.0.1/", "blocked_ip"],
  ["https://10.255.255.255/", "blocked_ip"],
  ["https://172.16.0.1/", "blocked_ip"],
  ["https://172.31.255.254/", "blocked_ip"],
  ["https://192.168.1.1/", "blocked_ip"],
  ["https://100.64.0.1/", "blocked_ip"],
  ["https://100.127.255.254/", "blocked_ip"],
  ["https://127.0.0.1/", "blocked_ip"],
  ["https://127.255.255.254/", "blocked_ip"],
  ["https://169.254.169.254/latest/meta-data", "blocked_ip"],
  ["https://192.0.0.8/", "blocked_ip"],
  ["https://192.0.2.10/", "blocked_ip"],
  ["https://198.51.100.7/", "blocked_ip"],
  ["https://203.0.113.9/", "blocked_ip"],
  ["https://198.18.0.1/", "blocked_ip"],
  ["https://198.19.255.254/", "blocked_ip"],
  ["https://224.0.0.1/", "blocked_ip"],
  ["https://239.255.255.250/", "blocked_ip"],
  ["https://240.0.0.1/", "blocked_ip"],
  ["https://255.255.255.255/", "blocked_ip"],
  // IPv4: numeric spellings normalised by WHATWG URL to 127.0.0.1 and friends
  ["https://0x7f.1/", "blocked_ip"],
  ["https://2130706433/", "blocked_ip"],
  ["https://017700000001/", "blocked_ip"],
  ["https://127.1/", "blocked_ip"],
  ["https://0x7f000001/", "blocked_ip"],
  ["https://0177.0.0.1/", "blocked_ip"],
  ["https://127.0.0.1./", "blocked_ip"],
  ["https://0/", "blocked_ip"],
  ["https://0xa.0.0.1/", "blocked_ip"],
  ["https://3232235777/", "blocked_ip"], // 192.168.1.1
  ["https://0xA9FEA9FE/", "blocked_ip"], // 169.254.169.254
  // IPv6
  ["https://[::]/", "blocked_ip"],
  ["https://[::1]/", "blocked_ip"],
  ["https://[0:0:0:0:0:0:0:1]/", "blocked_ip"],
  ["https://[fe80::1]/", "blocked_ip"],
  ["https://[febf:ffff::1]/", "blocked_ip"],
  ["https://[fc00::1]/", "blocked_ip"],
  ["https://[fd12:3456:789a::1]/", "blocked_ip"],
  ["https://[ff02::1]/", "blocked_ip"],
  ["https://[ff05::2]/", "blocked_ip"],
  ["https://[::ffff:127.0.0.1]/", "blocked_ip"], // IPv4-mapped loopback
  ["https://[::ffff:7f00:1]/", "blocked_ip"],
  ["https://[::ffff:10.0.0.1]/", "blocked_ip"],
  ["https://[::ffff:169.254.169.254]/", "blocked_ip"],
  ["https://[0:0:0:0:0:ffff:c0a8:101]/", "blocked_ip"],
  ["https://[::ffff:0:a00:1]/", "blocked_ip"], // IPv4-translated 10.0.0.1
  ["https://[::127.0.0.1]/", "blocked_ip"], // IPv4-compatible ::a.b.c.d
  ["https://[::8.8.8.8]/", "blocked_ip"], // IPv4-compatible, any address
  ["https://[64:ff9b::7f00:1]/", "blocked_ip"], // NAT64
  ["https://[64:ff9b::8.8.8.8]/", "blocked_ip"],
  ["https://[64:ff9b:1::1]/", "blocked_ip"],
  ["https://[2002:7f00:1::1]/", "blocked_ip"], // 6to4
  ["https://[2002:808:808::1]/", "blocked_ip"],
  ["https://[2001::1]/", "blocked_ip"], // Teredo
  ["https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "blocked_ip"],
  ["https://[2001:db8::1]/", "blocked_ip"], // documentation
  ["https://[fec0::1]/", "blocked_ip"], // site-local
  ["https://[100::1]/", "blocked_ip"], // discard-only
]

describe("webhook URL rules (table)", () => {
  it("covers at least 60 URLs", () => {
    expect(table.length).toBeGreaterThanOrEqual(60)
  })

  it.each(table)("%s -> %s", (url, expected) => {
    const verdict = checkWebhookUrl(url, { allowPrivateTargets: false })
    if (expected === "ok") {
      expect(verdict).toMatchObject({ ok: true })
    } else {
      expect(verdict).toMatchObject({ ok: false, reason: expected })
    }
  })
})

describe("WEBHOOK_ALLOW_PRIVATE_TARGETS (development only)", () => {
  it.each(["http://127.0.0.1:4000/hook", "http://localhost:4000/hook", "https://10.0.0.5/hook", "http://[::1]:4000/"])(
    "admits %s",
    (url) => {
      expect(checkWebhookUrl(url, { allowPrivateTargets: true })).toMatchObject({ ok: true })
    },
  )

  it.each([
    ["http://user:pw@127.0.0.1/", "userinfo"],
    ["http://127.0.0.1/#x", "fragment"],
    ["ftp://127.0.0.1/", "scheme_not_https"],
  ] as const)("still refuses %s (%s)", (url, reason) => {
    expect(checkWebhookUrl(url, { allowPrivateTargets: true })).toMatchObject({ ok: false, reason })
  })
})

describe("resolved addresses checked at connect time", () => {
  it.each([
    ["127.0.0.1", true],
    ["10.1.2.3", true],
    ["169.254.169.254", true],
    ["100.64.1.1", true],
    ["93.184.216.34", false],
    ["::1", true],
    ["fe80::1%eth0", true],
    ["::ffff:127.0.0.1", true],
    ["::ffff:93.184.216.34", false],
    ["2606:2800:220:1:248:1893:25c8:1946", false],
    ["2002:a00:1::", true],
    ["64:ff9b::a00:1", true],
    ["not-an-ip", true],
  ] as const)("%s blocked=%s", (address, blocked) => {
    expect(isBlockedAddress(address)).toBe(blocked)
  })
})
