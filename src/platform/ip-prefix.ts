import { isIPv4, isIPv6 } from "node:net"
import type { makeCrypto } from "./crypto.js"

/** The eight 16-bit groups of an IPv6 address, as 4-digit lowercase hex (a dotted IPv4 tail becomes two groups). */
const ipv6Groups = (ip: string): Array<string> => {
  let text = ip.toLowerCase()
  const dotted = /(\d{1,3}(?:\.\d{1,3}){3})$/.exec(text)
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split(".").map(Number) as [number, number, number, number]
    text = text.slice(0, -dotted[1]!.length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head = "", tail = ""] = text.split("::")
  const headParts = head === "" ? [] : head.split(":")
  const tailParts = tail === "" ? [] : tail.split(":")
  return [...headParts, ...Array(8 - headParts.length - tailParts.length).fill("0"), ...tailParts].map((g) =>
    g.padStart(4, "0"),
  )
}

/** The /24 of an IPv4 address or the /48 of an IPv6 address (IPv4-mapped IPv6 counts as IPv4). */
export const ipPrefix = (ip: string): string | undefined => {
  const v4 = ip.replace(/^::ffff:/i, "")
  if (isIPv4(v4)) return v4.split(".").slice(0, 3).join(".") + ".0/24"
  if (!isIPv6(ip)) return undefined
  return ipv6Groups(ip).slice(0, 3).join(":") + "::/48"
}

/**
 * The unit a rate limit counts per client address: an IPv4 address, or the /64 of an IPv6
 * address (one subscriber's LAN is a /64, RFC 6177 / RFC 7421; counting single IPv6
 * addresses would give every client 2^64 budgets). Unknown input counts as one unit.
 */
export const rateLimitAddress = (ip: string | undefined): string => {
  if (ip === undefined) return "unknown"
  const v4 = ip.replace(/^::ffff:/i, "")
  if (isIPv4(v4)) return v4
  if (!isIPv6(ip)) return "unknown"
  return ipv6Groups(ip).slice(0, 4).join(":") + "::/64"
}

/**
 * The /56 and /48 networks of an IPv6 address, for limits that aggregate many /64s: a /56 is a
 * common delegation to one customer site and a /48 to one organisation (RFC 6177), so one
 * holder has 256 or 65,536 /64s. Undefined for IPv4 (IPv4-mapped included) and unknown input.
 */
export const ipv6Networks = (
  ip: string | undefined,
): { readonly net56: string; readonly net48: string } | undefined => {
  if (ip === undefined || isIPv4(ip.replace(/^::ffff:/i, "")) || !isIPv6(ip)) return undefined
  const groups = ipv6Groups(ip)
  const net48 = groups.slice(0, 3).join(":")
  return { net56: `${net48}:${groups[3]!.slice(0, 2)}00::/56`, net48: `${net48}::/48` }
}

/**
 * `ipPrefixHash` of the events: HMAC-SHA256 under a per-Workspace key of the IP prefix,
 * 64 lowercase hex characters. A plain SHA-256 of a /24 would be reversible by brute force.
 */
export const ipPrefixHash = (crypto: ReturnType<typeof makeCrypto>, workspaceId: string, ip: string | undefined) => {
  const prefix = ip === undefined ? undefined : ipPrefix(ip)
  return prefix === undefined ? undefined : crypto.hmac(`ip-prefix/${workspaceId}`, prefix).toString("hex")
}
