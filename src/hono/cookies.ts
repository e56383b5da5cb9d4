import type { Context } from "hono"
import { deleteCookie, getCookie, setCookie } from "hono/cookie"

/**
 * Chunked cookies. Browsers keep at most ~4096 bytes per cookie (RFC 6265 6.1), name and
 * attributes included, so a sealed value longer than CHUNK_SIZE is split into `name.0`,
 * `name.1`, ... and joined in index order on read. Writing always removes the cookies of
 * the other shape and any chunk beyond the new count, so a shrinking session leaves no stale
 * tail that would corrupt the next read.
 */
export const CHUNK_SIZE = 3800

export interface CookieAttributes {
  /** `Secure` (and the `__Host-` prefix): everywhere except http://localhost (see auth.ts). */
  readonly secure: boolean
}

const attributes = (attrs: CookieAttributes, maxAgeSeconds?: number) => ({
  path: "/",
  httpOnly: true,
  sameSite: "Lax" as const,
  secure: attrs.secure,
  ...(maxAgeSeconds === undefined ? {} : { maxAge: maxAgeSeconds }),
})

const chunkName = (name: string, i: number) => `${name}.${i}`

/** The names of `name`'s cookies the request carries: the whole one and/or its chunks. */
const presentNames = (c: Context, name: string): Array<string> => {
  const all = getCookie(c)
  return Object.keys(all).filter((n) => n === name || (n.startsWith(`${name}.`) && /^\d+$/.test(n.slice(name.length + 1))))
}

export const readCookie = (c: Context, name: string): string | undefined => {
  const all = getCookie(c)
  const whole = all[name]
  if (whole !== undefined && whole !== "") return whole
  const parts: Array<string> = []
  for (let i = 0; ; i++) {
    const part = all[chunkName(name, i)]
    if (part === undefined || part === "") break
    parts.push(part)
  }
  return parts.length === 0 ? undefined : parts.join("")
}

export const writeCookie = (c: Context, name: string, value: string, attrs: CookieAttributes, maxAgeSeconds: number) => {
  const written = new Set<string>()
  if (value.length <= CHUNK_SIZE) {
    setCookie(c, name, value, attributes(attrs, maxAgeSeconds))
    written.add(name)
  } else {
    for (let i = 0, offset = 0; offset < value.length; i++, offset += CHUNK_SIZE) {
      setCookie(c, chunkName(name, i), value.slice(offset, offset + CHUNK_SIZE), attributes(attrs, maxAgeSeconds))
      written.add(chunkName(name, i))
    }
  }
  for (const stale of presentNames(c, name)) if (!written.has(stale)) deleteCookie(c, stale, attributes(attrs))
}

export const clearCookie = (c: Context, name: string, attrs: CookieAttributes) => {
  for (const present of presentNames(c, name)) deleteCookie(c, present, attributes(attrs))
}
