import type { ProfileMapping } from "../management/connections/schema.js"

/** What social login keeps of a provider's answer, after the Connection's `profile_mapping`. */
export interface SocialProfile {
  /**
   * The provider's subject: with the issuer and the claim it was read from, THE identity
   * (never the email; ./identity-key.ts).
   */
  readonly subject: string
  /** The claim the subject was read from: `sub`, unless a generic OIDC mapping names another. */
  readonly subjectClaim: string
  /** Who vouches for the subject (the provider adapter's validated issuer). */
  readonly issuer: string
  readonly email: string | undefined
  /** Only a provider-verified address counts as verified (docs/decisions/social-login.md). */
  readonly emailVerified: boolean
  readonly name: string | undefined
  readonly avatarUrl: string | undefined
  readonly locale: string | undefined
}

/** The standard claim (OIDC Core section 5.1) each profile field is read from by default. */
const STANDARD: Readonly<Record<keyof ProfileMapping, string>> = {
  sub: "sub",
  email: "email",
  email_verified: "email_verified",
  name: "name",
  avatar_url: "picture",
  locale: "locale",
}

const text = (value: unknown, max: number) =>
  typeof value === "string" && value.trim() !== ""
    ? value.trim().slice(0, max)
    : typeof value === "number"
      ? String(value)
      : undefined

/** Apple sends `"true"` as a string; every other provider a JSON boolean. */
const isTrue = (value: unknown) => value === true || value === "true"

/**
 * Applies `profile_mapping` (docs/decisions/social-login.md, Connections: claim names; an absent key
 * uses the standard claim). A claim path may not reach into nested objects: a name is a
 * top-level claim. Returns undefined when there is no usable subject.
 */
export const applyProfileMapping = (
  issuer: string,
  claims: Readonly<Record<string, unknown>>,
  mapping: ProfileMapping,
): SocialProfile | undefined => {
  const read = (field: keyof ProfileMapping) => claims[mapping[field] ?? STANDARD[field]]
  // The standard `email_verified` speaks of the standard `email` claim only: an address read
  // from another claim is verified only by a verification claim the mapping names for it.
  const emailFromStandardClaim = (mapping.email ?? STANDARD.email) === STANDARD.email
  const verified =
    mapping.email_verified !== undefined || emailFromStandardClaim ? isTrue(read("email_verified")) : false
  const subject = text(read("sub"), 255)
  if (subject === undefined) return undefined
  const email = text(read("email"), 254)
  const emailShaped = email !== undefined && /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) ? email : undefined
  const avatar = text(read("avatar_url"), 2048)
  return {
    subject,
    subjectClaim: mapping.sub ?? STANDARD.sub,
    issuer,
    email: emailShaped,
    emailVerified: emailShaped !== undefined && verified,
    name: text(read("name"), 200),
    avatarUrl: avatar !== undefined && /^https:\/\//.test(avatar) ? avatar : undefined,
    locale: text(read("locale"), 35),
  }
}
