/**
 * Origins and return-to paths. The application's origin comes from configuration (the
 * redirect URI), never from the request's Host header, which a client controls.
 */
const LOCAL_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"])

/** http is only acceptable for a browser talking to its own machine (RFC 8252 8.3 reasoning). */
export const isLocalHost = (hostname: string) => LOCAL_HOSTS.has(hostname) || hostname.endsWith(".localhost")

const MAX_RETURN_TO = 2048

/**
 * A path the browser resolves against the current origin: one leading `/`, not `//host`
 * (scheme-relative) nor `/\host` (browsers read a backslash in a special URL as a slash,
 * WHATWG URL "path start state"), no control characters (the URL parser strips tab, LF and CR,
 * so `/\t/host` would become `//host`).
 */
const isOriginRelativePath = (path: string) =>
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the rule
  path.startsWith("/") && !path.startsWith("//") && !path.startsWith("/\\") && !/[\u0000-\u001f\u007f]/.test(path)

/** pathname + search + hash: what a same-origin Location needs. */
const pathOf = (url: URL) => `${url.pathname}${url.search}${url.hash}`

/**
 * A same-origin path to go back to after sign-in, or the fallback: an open redirect through
 * `returnTo` would turn the sign-in page into a phishing relay. The input must look like a
 * path (no backslash anywhere), and so must the value RETURNED: parsing normalises dot
 * segments, so `/.//evil.example`, `/%2e//evil.example` and `/x/..//evil.example` all become
 * `//evil.example`, which a browser reads as another host. The returned path is therefore
 * checked again, and must resolve to itself on the application's origin (the browser applies
 * the same WHATWG parsing to the Location header).
 */
export const safeReturnTo = (value: string | undefined, appOrigin: string, fallback = "/"): string => {
  if (value === undefined || value === "" || value.length > MAX_RETURN_TO) return fallback
  if (!isOriginRelativePath(value) || value.includes("\\")) return fallback
  let path: string
  try {
    const url = new URL(value, appOrigin)
    if (url.origin !== appOrigin) return fallback
    path = pathOf(url)
    if (path.length > MAX_RETURN_TO || !isOriginRelativePath(path)) return fallback
    const resolved = new URL(path, appOrigin)
    if (resolved.origin !== appOrigin || pathOf(resolved) !== path) return fallback
  } catch {
    return fallback
  }
  return path
}
