import { BlockList, isIP, isIPv4 } from "node:net"

/**
 * Which proxies in front of the service are trusted to report the client address in
 * `X-Forwarded-For` (docs/architecture.md: X-Forwarded-* is ignored unless TRUST_PROXY is set).
 *
 * - `none`: the socket peer is the client.
 * - `hops`: exactly this many proxies stand in front of every replica (the socket peer is
 *   the nearest); the client is the address the farthest of them saw.
 * - `cidrs`: proxies are recognised by address; walking from the socket peer towards the
 *   client, every trusted address is skipped and the first untrusted one is the client.
 *
 * The leftmost `X-Forwarded-For` entry is never trusted on its own: the client writes
 * whatever it likes there, and each proxy only appends (RFC 7239 section 5.2 describes
 * the same chain for `Forwarded: for=`).
 */
export type TrustProxy =
  | { readonly kind: "none" }
  | { readonly kind: "hops"; readonly hops: number }
  | { readonly kind: "cidrs"; readonly cidrs: ReadonlyArray<string>; readonly list: BlockList }

/** Bare address without an IPv4-mapped prefix, brackets or a port; undefined if not an IP. */
export const normalizeIp = (raw: string): string | undefined => {
  let value = raw.trim()
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(value)
  if (bracketed) value = bracketed[1]!
  else if (/^\d{1,3}(\.\d{1,3}){3}:\d+$/.test(value)) value = value.replace(/:\d+$/, "")
  value = value.replace(/^::ffff:(?=\d{1,3}(\.\d{1,3}){3}$)/i, "")
  return isIP(value) === 0 ? undefined : value.toLowerCase()
}

/**
 * Parses `TRUST_PROXY`: unset, empty, `false` or `0` trust nothing; a whole number is a hop
 * count; otherwise a comma-separated list of addresses or CIDR blocks. `true` is refused:
 * it used to mean "believe the leftmost entry", which the client controls.
 * Returns a one-line error message instead of throwing (config.ts reports it).
 */
export const parseTrustProxy = (raw: string | undefined): TrustProxy | string => {
  const value = (raw ?? "").trim()
  if (value === "" || /^(false|no|off|0)$/i.test(value)) return { kind: "none" }
  if (/^\d+$/.test(value)) {
    const hops = Number(value)
    return hops > 0 && hops <= 32 ? { kind: "hops", hops } : "TRUST_PROXY hop count must be 1 to 32"
  }
  if (/^(true|yes|on)$/i.test(value)) {
    return "TRUST_PROXY must be the number of proxies in front of the service (e.g. 1) or their addresses/CIDRs (e.g. 10.0.0.0/8,fd00::/8); true is no longer accepted"
  }
  const list = new BlockList()
  const cidrs: Array<string> = []
  for (const part of value
    .split(",")
    .map((p) => p.trim())
    .filter((p) => p !== "")) {
    const [address = "", prefixText, extra] = part.split("/")
    const ip = normalizeIp(address)
    const family = ip === undefined ? 0 : isIP(ip)
    const max = family === 4 ? 32 : 128
    const prefix = prefixText === undefined ? max : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : -1
    if (ip === undefined || extra !== undefined || prefix < 0 || prefix > max) {
      return `TRUST_PROXY entry "${part}" is not an IP address or CIDR block (e.g. 10.0.0.0/8)`
    }
    list.addSubnet(ip, prefix, family === 4 ? "ipv4" : "ipv6")
    cidrs.push(`${ip}/${prefix}`)
  }
  return cidrs.length === 0 ? { kind: "none" } : { kind: "cidrs", cidrs, list }
}

const isTrusted = (list: BlockList, ip: string) => list.check(ip, isIPv4(ip) ? "ipv4" : "ipv6")

/**
 * The client address of a request: walk from the socket peer back through
 * `X-Forwarded-For` (rightmost first), past the trusted proxies only. Should an entry a
 * trusted proxy handed over not be an IP address (a misconfigured proxy), the last good
 * address stands: never anything further left, which the client could have written.
 */
export const clientIp = (
  trust: TrustProxy,
  socketPeer: string | undefined,
  forwardedFor: string | undefined,
): string | undefined => {
  const peer = socketPeer === undefined ? undefined : (normalizeIp(socketPeer) ?? socketPeer)
  if (trust.kind === "none" || peer === undefined || !forwardedFor) return peer
  const chain = forwardedFor
    .split(",")
    .map((e) => e.trim())
    .filter((e) => e !== "")
    .reverse()
  let client = peer
  for (let i = 0; i < chain.length; i++) {
    const proxyTrusted = trust.kind === "hops" ? i < trust.hops : isTrusted(trust.list, client)
    if (!proxyTrusted) break
    const next = normalizeIp(chain[i]!)
    if (next === undefined) break
    client = next
  }
  return client
}

export const UNTRUSTED_FORWARDING_WARNING =
  "Requests carry X-Forwarded-For but TRUST_PROXY is unset, so the proxy's own address is taken as every " +
  "client's (rate limits, ipPrefixHash); set TRUST_PROXY to the number of proxies in front of the service or their addresses/CIDRs (logged once per process)"

/**
 * Whether to warn, for this request, that `X-Forwarded-For` (or `Forwarded`) arrives while
 * TRUST_PROXY trusts no proxy: a deployment behind a proxy that forgot the setting sees one
 * client address for everyone, so one caller's rate limit locks every user out. True once per
 * process (the returned function remembers), in every mode: a development proxy misleads the
 * same way (decisions: Production operation).
 */
export const untrustedForwardingDetector = (trust: TrustProxy) => {
  let warned = trust.kind !== "none"
  return (headers: Readonly<Record<string, string | undefined>>): boolean => {
    if (warned || (headers["x-forwarded-for"] === undefined && headers["forwarded"] === undefined)) return false
    warned = true
    return true
  }
}
