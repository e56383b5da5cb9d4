/** The user fields that scopes release (spec: Authentication rule 7; UserInfo). */
export interface ProfileSource {
  readonly name: string | null
  readonly locale: string | null
  readonly updated_at: Date
  readonly email: string
  readonly email_verified: boolean
}

export const unixSeconds = (date: Date | number) =>
  Math.floor((typeof date === "number" ? date : date.getTime()) / 1000)

/**
 * `profile` releases `name`, `locale`, `updated_at` (Unix seconds); `email` releases
 * `email`, `email_verified`. Claims without a value are omitted (OIDC Core 5.3.2).
 * Used by the ID token and by UserInfo; never by the access token (rule 7: email is never
 * in the access token).
 */
export const scopedUserClaims = (scopes: ReadonlyArray<string>, user: ProfileSource): Record<string, unknown> => {
  const claims: Record<string, unknown> = {}
  if (scopes.includes("profile")) {
    if (user.name !== null) claims["name"] = user.name
    if (user.locale !== null) claims["locale"] = user.locale
    claims["updated_at"] = unixSeconds(user.updated_at)
  }
  if (scopes.includes("email")) {
    claims["email"] = user.email
    claims["email_verified"] = user.email_verified
  }
  return claims
}
