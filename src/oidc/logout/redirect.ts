/**
 * Spec, Logout: success is a 302 to the registered URI with its existing query kept and
 * `state` appended unchanged (form-urlencoded as a query value).
 */
export const logoutRedirectLocation = (registered: string, state: string | undefined) => {
  if (state === undefined) return registered
  const hash = registered.indexOf("#")
  const base = hash < 0 ? registered : registered.slice(0, hash)
  const fragment = hash < 0 ? "" : registered.slice(hash)
  const separator = base.includes("?") ? (base.endsWith("?") || base.endsWith("&") ? "" : "&") : "?"
  return `${base}${separator}state=${encodeURIComponent(state)}${fragment}`
}
