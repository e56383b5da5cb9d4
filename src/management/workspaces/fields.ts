import { Effect } from "effect"
import { InvalidRequest } from "../../http/errors.js"
import { bodyText } from "../../http/route.js"

/**
 * Refuses a JSON body that names a field the caller may not set (a read-only or derived
 * one), with a 400 `invalid_request` that says why, before the shape is decoded.
 * An unreadable body passes through: decoding then reports it as `invalid_request_body`.
 */
export const refuseBodyFields = (fields: Readonly<Record<string, string>>) => Effect.gen(function* () {
  const text = yield* bodyText
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return
  for (const [field, reason] of Object.entries(fields)) {
    if (Object.hasOwn(value, field)) return yield* new InvalidRequest({ detail: `${field} ${reason}` })
  }
})
