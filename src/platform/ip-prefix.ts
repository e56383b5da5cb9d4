import { isIPv4, isIPv6 } from "node:net"
import type { makeCrypto } from "./crypto.js"

/** The /24 of an IPv4 address or the /48 of an IPv6 address (IPv4-mapped IPv6 counts as IPv4). */
export const ipPrefix = (ip: string): string | undefined => {
  const v4 = ip.replace(/^::ffff:/i, "")
  if (isIPv4(v4)) return v4.split(".").slice(0, 3).join(".") + ".0/24"
  if (!isIPv6(ip)) return undefined
  const [head = "", tail = ""] = ip.toLowerCase().split("::")
  const headParts = head === "" ? [] : head.split(":")
  const tailParts = tail === "" ? [] : tail.split(":")
  const groups = [...headParts, ...Array(8 - headParts.length - tailParts.length).fill("0"), ...tailParts]
  return groups.slice(0, 3).map((g) => g.padStart(4, "0")).join(":") + "::/48"
}

/**
 * `ipPrefixHash` of the events: HMAC-SHA256 under a per-Workspace key of the IP prefix,
 * 64 lowercase hex characters. A plain SHA-256 of a /24 would be reversible by brute force.
 */
export const ipPrefixHash = (crypto: ReturnType<typeof makeCrypto>, workspaceId: string, ip: string | undefined) => {
  const prefix = ip === undefined ? undefined : ipPrefix(ip)
  return prefix === undefined ? undefined : crypto.hmac(`ip-prefix/${workspaceId}`, prefix).toString("hex")
}
