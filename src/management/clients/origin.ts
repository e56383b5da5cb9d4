import { commonUriProblem } from "./redirect-uri.js"

/**
 * `allowed_origins` entries are exact Web Origins, `scheme://host[:port]`, compared with the
 * browser's `Origin` header as strings (spec: Client; CORS "registered exactly, no wildcard").
 * So an entry must already be in the form a browser sends: lower-case host, no default
 * port, no path, not even a trailing `/`. Like redirect URIs: https, or http only for
 * localhost / 127.0.0.1.
 */
export const allowedOriginProblem = (origin: string): string | undefined => {
  const common = commonUriProblem(origin)
  if (common !== undefined) return common
  const url = new URL(origin)
  if (url.protocol !== "https:" && url.protocol !== "http:") return "must be an http(s) origin"
  if (!/^[a-z][a-z0-9+.-]*:\/\/[^/?#]+$/i.test(origin))
    return "must be an origin (scheme://host[:port]) without path, query or trailing slash"
  if (url.username !== "" || url.password !== "") return "must not contain userinfo"
  if (url.protocol === "http:" && url.hostname !== "localhost" && url.hostname !== "127.0.0.1") {
    return "may use http only for localhost or 127.0.0.1; use https"
  }
  if (url.origin !== origin) return `must be written exactly as browsers send it: ${url.origin}`
  return undefined
}
