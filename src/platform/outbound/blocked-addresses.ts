import { isIPv4, isIPv6 } from "node:net"

/**
 * Addresses a webhook may never reach (spec: Events, Subscription rule 2; docs/architecture.md, Security
 * model). Used at registration on IP literals and at connect time on every resolved
 * address, so a name that resolves (or re-resolves) to one of them is refused.
 */

type V4Range = readonly [network: number, prefix: number]

const v4 = (text: string): number => text.split(".").reduce((acc, part) => acc * 256 + Number(part), 0)

const cidr4 = (text: string): V4Range => {
  const [net, prefix] = text.split("/") as [string, string]
  return [v4(net), Number(prefix)]
}

/** IPv4 ranges of the spec: RFC 1918, CGNAT, 0/8, loopback, link-local, 192.0.0.0/24, documentation, benchmarking, multicast, reserved. */
export const BLOCKED_IPV4 = [
  "0.0.0.0/8", // "this network"
  "10.0.0.0/8",
  "172.16.0.0/12",
  "192.168.0.0/16", // RFC 1918
  "100.64.0.0/10", // CGNAT (RFC 6598)
  "127.0.0.0/8", // loopback
  "169.254.0.0/16", // link-local
  "192.0.0.0/24", // IETF protocol assignments
  "192.0.2.0/24",
  "198.51.100.0/24",
  "203.0.113.0/24", // documentation (RFC 5737)
  "198.18.0.0/15", // benchmarking (RFC 2544)
  "192.88.99.0/24", // deprecated 6to4 relay anycast (RFC 7526)
  "224.0.0.0/4", // multicast
  "240.0.0.0/4", // reserved, including 255.255.255.255
].map(cidr4)

const inRange4 = (address: number, [network, prefix]: V4Range) => {
  if (prefix === 0) return true
  const size = 2 ** (32 - prefix)
  return Math.floor(address / size) === Math.floor(network / size)
}

export const isBlockedIPv4 = (address: string): boolean => {
  if (!isIPv4(address)) return true
  const n = v4(address)
  return BLOCKED_IPV4.some((range) => inRange4(n, range))
}

/** Eight 16-bit groups of an IPv6 address (zone id dropped), or undefined when not IPv6. */
export const parseIPv6 = (input: string): ReadonlyArray<number> | undefined => {
  const address = input.replace(/^\[|\]$/g, "").replace(/%.*$/, "")
  if (!isIPv6(address)) return undefined
  let text = address.toLowerCase()
  const tail: Array<number> = []
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (dotted) {
    const n = v4(dotted[1]!)
    tail.push(Math.floor(n / 65536), n % 65536)
    text = text.slice(0, -dotted[1]!.length)
    if (text.endsWith(":") && !text.endsWith("::")) text = text.slice(0, -1)
  }
  const [head, rest] = text.includes("::") ? (text.split("::") as [string, string]) : [text, undefined]
  const parse = (part: string) => (part === "" ? [] : part.split(":").map((g) => parseInt(g, 16)))
  const left = parse(head)
  const right = rest === undefined ? [] : parse(rest)
  const missing = 8 - left.length - right.length - tail.length
  if (rest === undefined && missing !== 0) return undefined
  const groups = [...left, ...Array<number>(Math.max(0, missing)).fill(0), ...right, ...tail]
  return groups.length === 8 ? groups : undefined
}

const embeddedV4 = (g: ReadonlyArray<number>) => `${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}`

const zeros = (g: ReadonlyArray<number>, from: number, to: number) => g.slice(from, to).every((x) => x === 0)

/**
 * IPv6: only global unicast (2000::/3) may be reached, minus the special-purpose blocks
 * inside it (6to4 2002::/16, Teredo and other IETF assignments 2001::/23, documentation
 * 2001:db8::/32 and 3fff::/20). IPv4-mapped (::ffff:a.b.c.d) and IPv4-translated
 * (::ffff:0:a.b.c.d) forms are judged by their IPv4 address; IPv4-compatible ::a.b.c.d
 * (deprecated), NAT64 64:ff9b::/96 and 64:ff9b:1::/48 are refused outright, since they
 * can lead to any IPv4 address. Everything outside 2000::/3 (unspecified, loopback,
 * link-local, unique-local, site-local, multicast, discard) is refused.
 */
export const isBlockedIPv6 = (address: string): boolean => {
  const g = parseIPv6(address)
  if (!g) return true
  if (zeros(g, 0, 5) && g[5] === 0xffff) return isBlockedIPv4(embeddedV4(g)) // ::ffff:0:0/96 mapped
  if (zeros(g, 0, 4) && g[4] === 0xffff && g[5] === 0) return isBlockedIPv4(embeddedV4(g)) // ::ffff:0:0:0/96 translated
  if (zeros(g, 0, 6)) return true // ::/96: unspecified, loopback, IPv4-compatible
  if (g[0] === 0x64 && g[1] === 0xff9b) return true // NAT64 64:ff9b::/96 and 64:ff9b:1::/48
  if ((g[0]! & 0xe000) !== 0x2000) return true // outside global unicast 2000::/3
  if (g[0] === 0x2002) return true // 6to4
  if (g[0] === 0x2001 && g[1]! < 0x0200) return true // 2001::/23: Teredo 2001::/32, benchmarking, ORCHID, ...
  if (g[0] === 0x2001 && g[1] === 0x0db8) return true // documentation
  if (g[0] === 0x3fff && g[1]! < 0x1000) return true // documentation (RFC 9637)
  return false
}

/** True when the address (IPv4 dotted quad or IPv6, brackets allowed) may not be reached. */
export const isBlockedAddress = (address: string): boolean =>
  isIPv4(address) ? isBlockedIPv4(address) : isBlockedIPv6(address)
