/**
 * Refresh token format (spec: Identifier formats): `rt_<family-id>.<generation>.<secret>`,
 * family id `fam_` + 32 [a-z2-7], generation a positive decimal integer, secret 256 random
 * bits as unpadded base64url (43 characters).
 */
export interface ParsedRefreshToken {
  readonly familyId: string
  readonly generation: number
  readonly secret: string
}

const FORMAT = /^rt_(fam_[a-z2-7]{32})\.([1-9][0-9]{0,8})\.([A-Za-z0-9_-]{43})$/

export const formatRefreshToken = (familyId: string, generation: number, secret: string) =>
  `rt_${familyId}.${generation}.${secret}`

export const parseRefreshToken = (token: string): ParsedRefreshToken | undefined => {
  const m = FORMAT.exec(token)
  return m ? { familyId: m[1]!, generation: Number(m[2]), secret: m[3]! } : undefined
}

/** Looks like a refresh token of ours (for format detection at revoke/introspect, whatever the hint). */
export const looksLikeRefreshToken = (token: string) => token.startsWith("rt_")
