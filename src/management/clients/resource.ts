import { commonUriProblem } from "./redirect-uri.js"

/** At most 20 audiences per Client (spec: Limits, `allowed_resources`). */
export const MAX_ALLOWED_RESOURCES = 20

/**
 * `allowed_resources` entries are HTTPS URLs naming permitted token audiences (spec:
 * Authentication rule 9; RFC 8707 section 2: absolute URI, no fragment). Compared exactly.
 */
export const allowedResourceProblem = (resource: string): string | undefined => {
  const common = commonUriProblem(resource)
  if (common !== undefined) return common
  const url = new URL(resource)
  if (url.protocol !== "https:" || !/^https:\/\/[^/?#]/i.test(resource)) return "must be an https URL"
  if (url.username !== "" || url.password !== "") return "must not contain userinfo"
  return undefined
}
