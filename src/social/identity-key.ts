import type { ConnectionRow } from "../management/connections/repo.js"
import type { Provider } from "../management/connections/schema.js"
import type { SocialProfile } from "./profile.js"
import { APPLE_ISSUER, GITHUB, GOOGLE_ISSUER } from "./providers/endpoints.js"

// Who an identity is (docs/decisions/social-login.md, Social login: "Identities carry their issuer"). OIDC
// Core 1.0 section 2: `sub` is unique only within its issuer, so an identity is the provider key,
// the issuer, the claim the subject was read from, and the subject. A connection whose `issuer`
// is re-pointed, or whose `profile_mapping.sub` is remapped, issues another namespace: the old
// identities match nothing there (their users prove the account once, `link_required`) and can
// no longer sign in ("stale"); a value another IdP or a user-chosen claim carries never lands
// in an existing account.

/** The issuer of the providers whose connections cannot choose one (GitHub: its OAuth origin). */
export const FIXED_ISSUERS: Readonly<Record<Exclude<Provider, "microsoft" | "generic_oidc">, string>> = {
  google: GOOGLE_ISSUER,
  apple: APPLE_ISSUER,
  github: GITHUB.issuer,
}

/** The claim a connection reads the subject from (only generic OIDC may map it; Connections rules). */
export const subjectClaimOf = (connection: ConnectionRow) => connection.profile_mapping.sub ?? "sub"

export interface IdentityKey {
  /** The Connection's `provider_key` (the identity's `provider`). */
  readonly provider: string
  /** Null only for a legacy Microsoft identity or a pending link made before issuers were kept. */
  readonly issuer: string | null
  readonly subjectClaim: string
  readonly subject: string
  /**
   * Microsoft: an identity stored before issuers were kept (issuer null) matches and adopts the
   * validated tenant issuer; Microsoft's `sub` is pairwise per application and user, so no other
   * tenant can present it.
   */
  readonly adoptsLegacy: boolean
}

export const identityKeyOf = (connection: ConnectionRow, profile: SocialProfile): IdentityKey => ({
  provider: connection.provider_key,
  issuer: profile.issuer,
  subjectClaim: profile.subjectClaim,
  subject: profile.subject,
  adoptsLegacy: connection.provider === "microsoft",
})

/**
 * Whether the connection, as configured now, still issues identities of this issuer and subject
 * claim. Microsoft's issuer is per tenant and cannot be configured: any is current. The SQL
 * twin of this rule is `identityCurrentFor` (./repo.ts), for counts and replacements.
 */
export const isCurrentFor = (
  connection: ConnectionRow,
  identity: { readonly issuer: string | null; readonly subjectClaim: string },
) => {
  if (identity.subjectClaim !== subjectClaimOf(connection)) return false
  if (connection.provider === "microsoft") return true
  const expected = connection.provider === "generic_oidc" ? connection.issuer : FIXED_ISSUERS[connection.provider]
  return identity.issuer !== null && identity.issuer === expected
}
