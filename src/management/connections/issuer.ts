/**
 * A `generic_oidc` issuer: an https URL without query, fragment or userinfo (OpenID Connect
 * Discovery 1.0 section 2; the spec: "issuer (https URL)"). Kept exactly as sent, because the
 * provider's `iss` claim must equal it byte for byte. Which addresses may be fetched is
 * decided when the login code connects, not here.
 */
export const issuerProblem = (issuer: string): string | undefined => {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the rule
  if (/[\s\u0000-\u001f\u007f]/.test(issuer)) return "must not contain spaces or control characters"
  if (issuer.includes("*")) return "must not contain wildcards (*)"
  if (!URL.canParse(issuer) || !/^https:\/\/[^/?#]/i.test(issuer)) return "must be an https URL"
  const url = new URL(issuer)
  if (url.username !== "" || url.password !== "") return "must not contain userinfo"
  if (issuer.includes("?") || issuer.includes("#")) return "must not contain a query or fragment"
  return undefined
}
