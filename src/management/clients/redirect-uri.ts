/**
 * Registration rules for `redirect_uris` and `post_logout_redirect_uris`
 * (spec: Authentication rule 10). URIs are stored exactly as sent and later compared
 * byte for byte, so nothing here normalises: a URI either passes as written or is refused.
 */

export type ClientType = "web_bff" | "web_spa" | "react_native"

export const MAX_URI_LENGTH = 2048

/** Hosts a web client may use with plain `http` (spec: never `[::1]`). */
const HTTP_LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1"])

/** RFC 8252 section 7.1: a private-use scheme in reverse domain name notation, e.g. `com.example.app`. */
const REVERSE_DNS_SCHEME = /^[a-z][a-z0-9-]*(\.[a-z0-9][a-z0-9-]*)+$/i

/** Problems every registered URI shares: length, spaces, fragment, wildcard, absolute form. */
export const commonUriProblem = (uri: string): string | undefined => {
  if (uri.length === 0 || uri.length > MAX_URI_LENGTH) return `must be 1 to ${MAX_URI_LENGTH} characters`
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the rule
  if (/[\s\u0000-\u001f\u007f]/.test(uri)) return "must not contain spaces or control characters"
  if (uri.includes("#")) return "must not contain a fragment (#)"
  if (uri.includes("*")) return "must not contain wildcards (*)"
  if (!URL.canParse(uri)) return "must be an absolute URI"
  return undefined
}

/** The authority of `scheme://authority/...` as written (the URL parser would normalise it). */
const rawAuthority = (uri: string) => /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(uri)?.[1]

/** The host of a raw authority, without userinfo or port; `[::1]` keeps its brackets. */
const rawHost = (authority: string) => {
  const hostPort = authority.slice(authority.lastIndexOf("@") + 1)
  return hostPort.startsWith("[") ? hostPort.slice(0, hostPort.indexOf("]") + 1) : hostPort.replace(/:\d*$/, "")
}

const webUriProblem = (uri: string, scheme: string): string | undefined => {
  const authority = rawAuthority(uri)
  if ((scheme !== "https" && scheme !== "http") || authority === undefined) {
    return "must use https (or http for localhost / 127.0.0.1)"
  }
  if (authority.includes("@")) return "must not contain userinfo"
  const host = rawHost(authority).toLowerCase()
  if (host === "") return "must name a host"
  if (scheme === "http" && !HTTP_LOOPBACK_HOSTS.has(host)) {
    return host === "[::1]"
      ? "may use http only for localhost or 127.0.0.1 ([::1] is not allowed)"
      : "may use http only for localhost or 127.0.0.1; use https"
  }
  return undefined
}

const nativeUriProblem = (uri: string, scheme: string): string | undefined => {
  if (scheme === "https") return webUriProblem(uri, scheme)
  if (scheme === "http")
    return "must be an https Universal Link / App Link or a reverse-DNS custom scheme (e.g. com.example.app:/callback)"
  if (!REVERSE_DNS_SCHEME.test(scheme)) {
    return "must use https or a reverse-DNS custom scheme (e.g. com.example.app:/callback)"
  }
  if (uri.length <= scheme.length + 1) return "must have a path after the custom scheme"
  return undefined
}

/** Why `uri` cannot be registered for a client of `clientType`, or undefined when it can. */
export const redirectUriProblem = (clientType: ClientType, uri: string): string | undefined => {
  const common = commonUriProblem(uri)
  if (common !== undefined) return common
  const scheme = uri.slice(0, uri.indexOf(":")).toLowerCase()
  return clientType === "react_native" ? nativeUriProblem(uri, scheme) : webUriProblem(uri, scheme)
}
