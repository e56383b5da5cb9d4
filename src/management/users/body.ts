import { Effect, Schema, SchemaIssue } from "effect"
import { InvalidRequest, InvalidRequestBody } from "../../http/errors.js"
import { bodyText } from "../../http/route.js"

const describe = SchemaIssue.makeFormatterDefault()

/** True when the failure is a broken rule (a check such as the email syntax), not a wrong shape. */
const brokeARule = (issue: SchemaIssue.Issue): boolean => {
  switch (issue._tag) {
    case "Filter":
      return true
    case "Pointer":
    case "Encoding":
      return brokeARule(issue.issue)
    case "Composite":
    case "AnyOf":
      return issue.issues.some(brokeARule)
    default:
      return false
  }
}

/**
 * Decodes a JSON body with `schema` (the one the route documents). Following DESIGN's
 * decision, unreadable JSON, a wrong type, a missing or an unknown field is 400
 * `invalid_request_body`, while a well-typed value that breaks a rule (email syntax, URL,
 * locale, time zone, length) is 400 `invalid_request`.
 */
export const decodeBody = <S extends Schema.Top & { readonly DecodingServices: never }>(schema: S, options: { readonly emptyAs?: unknown } = {}) =>
  Effect.gen(function* () {
    const text = yield* bodyText
    let value: unknown
    if (text.trim() === "" && "emptyAs" in options) value = options.emptyAs
    else {
      try {
        value = JSON.parse(text)
      } catch {
        return yield* new InvalidRequestBody({ detail: "The request body is not valid JSON" })
      }
    }
    return yield* Schema.decodeUnknownEffect(schema)(value, { onExcessProperty: "error" }).pipe(
      Effect.mapError((e) => brokeARule(e.issue)
        ? new InvalidRequest({ detail: describe(e.issue) })
        : new InvalidRequestBody({ detail: describe(e.issue) })))
  }) as Effect.Effect<S["Type"], InvalidRequest | InvalidRequestBody | Effect.Error<typeof bodyText>, Effect.Services<typeof bodyText>>

/**
 * A field the body may not carry (read-only or immutable) is refused with 400
 * `invalid_request` naming it, before the shape is decoded (spec: "`email` cannot change").
 */
export const refuseFields = (fields: Readonly<Record<string, string>>) => Effect.gen(function* () {
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
