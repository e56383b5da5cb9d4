import Bowser from "bowser"

/**
 * The `device_name` a session shows in `/me/sessions` and the Management API (spec: Sessions;
 * format not shown), derived from the User-Agent of the sign-in's completing request: "Chrome
 * on macOS", or the one part that is known ("Firefox", "Android"). No User-Agent, or one that
 * names neither a browser nor an operating system (a script, a bot), gives null: a guess would
 * mislead a user looking for a session they do not recognise (docs/decisions/me.md).
 */
export const deviceNameOf = (userAgent: string | undefined): string | null => {
  if (userAgent === undefined || userAgent.trim() === "") return null
  const parsed = Bowser.parse(userAgent)
  const browser = parsed.browser.name?.trim() || undefined
  const os = parsed.os.name?.trim() || undefined
  if (browser && os) return `${browser} on ${os}`
  return browser ?? os ?? null
}
