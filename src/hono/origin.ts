/**
 * Origins and return-to paths. The application's origin comes from configuration (the
 * redirect URI), never from the request's Host header, which a client controls.
 */
const LOCAL_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"])

/** http is only acceptable for a browser talking to its own machine (RFC 8252 8.3 reasoning). */
export const isLocalHost = (hostname: string) => LOCAL_HOSTS.has(hostname) || hostname.endsWith(".localhost")

/**
 * A same-origin path to go back to after sign-in, or the fallback. Refuses absolute URLs,
 * scheme-relative `//host` and `/\host` (browsers read a backslash as a slash), and control
 * characters: an open redirect through `returnTo` would turn the sign-in page into a
 * phishing relay.
 */
export const safeReturnTo = (value: string | undefined, appOrigin: string, fallback = "/"): string => {
  if (value === undefined || value === "" || value.length > 2048) return fallback
  if (!value.startsWith("/") || value.startsWith("//") || value.startsWith("/\\")) return fallback
  if (/[\u0000-\u001f\u007f\\]/.test(value)) return fallback
  try {
    const url = new URL(value, appOrigin)
    if (url.origin !== appOrigin) return fallback
    return `${url.pathname}${url.search}${url.hash}`
  } catch {
    return fallback
  }
}
