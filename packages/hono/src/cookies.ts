import type { Context } from "hono"
import { generateCookie, getCookie } from "hono/cookie"

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

const attributes = (attrs: CookieAttributes, maxAgeSeconds: number) => ({
  path: "/",
  httpOnly: true,
  sameSite: "Lax" as const,
  secure: attrs.secure,
  maxAge: maxAgeSeconds,
})

const chunkName = (name: string, i: number) => `${name}.${i}`

/** The Set-Cookie lines written during each request (see `keepCookies`). */
const written = new WeakMap<Context, Array<string>>()

const emit = (c: Context, line: string) => {
  c.header("Set-Cookie", line, { append: true })
  const lines = written.get(c) ?? []
  lines.push(line)
  written.set(c, lines)
}
const set = (c: Context, name: string, value: string, attrs: CookieAttributes, maxAgeSeconds: number) =>
  emit(c, generateCookie(name, value, attributes(attrs, maxAgeSeconds)))
const remove = (c: Context, name: string, attrs: CookieAttributes) =>
  emit(c, generateCookie(name, "", attributes(attrs, 0)))

/**
 * After the handler: make sure the cookies this request wrote are on the final response. Hono
 * carries them into responses made with `c.json()`/`c.text()`/..., but not into a `Response`
 * the handler constructs itself, and a refreshed session whose cookie is lost would spend its
 * rotated refresh token for nothing.
 */
export const keepCookies = (c: Context) => {
  const lines = written.get(c)
  if (lines === undefined) return
  const present = new Set(c.res.headers.getSetCookie())
  const missing = lines.filter((l) => !present.has(l))
  if (missing.length === 0) return
  try {
    for (const line of missing) c.res.headers.append("Set-Cookie", line)
  } catch {
    // immutable headers (a Response from fetch): answer a copy. Hono's `res` setter would merge
    // the old response's Set-Cookie over the copy's, so clear it first.
    const copy = new Response(c.res.body, c.res)
    for (const line of missing) copy.headers.append("Set-Cookie", line)
    c.res = undefined
    c.res = copy
  }
}

/** The names of `name`'s cookies the request carries: the whole one and/or its chunks. */
const presentNames = (c: Context, name: string): Array<string> => {
  const all = getCookie(c)
  return Object.keys(all).filter(
    (n) => n === name || (n.startsWith(`${name}.`) && /^\d+$/.test(n.slice(name.length + 1))),
  )
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

export const writeCookie = (
  c: Context,
  name: string,
  value: string,
  attrs: CookieAttributes,
  maxAgeSeconds: number,
) => {
  const names = new Set<string>()
  if (value.length <= CHUNK_SIZE) {
    set(c, name, value, attrs, maxAgeSeconds)
    names.add(name)
  } else {
    for (let i = 0, offset = 0; offset < value.length; i++, offset += CHUNK_SIZE) {
      set(c, chunkName(name, i), value.slice(offset, offset + CHUNK_SIZE), attrs, maxAgeSeconds)
      names.add(chunkName(name, i))
    }
  }
  for (const stale of presentNames(c, name)) if (!names.has(stale)) remove(c, stale, attrs)
}

export const clearCookie = (c: Context, name: string, attrs: CookieAttributes) => {
  for (const present of presentNames(c, name)) remove(c, present, attrs)
}
