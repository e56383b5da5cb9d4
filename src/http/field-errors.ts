import { Schema, SchemaIssue } from "effect"

/**
 * One invalid field of a request body: where (an RFC 6901 JSON Pointer into the body, `""`
 * for the body itself) and which rule it breaks. The `errors` extension member of a 400
 * Problem Details lists them (docs/decisions/management-api.md, "Every invalid field").
 */
export const FieldError = Schema.Struct({ pointer: Schema.String, detail: Schema.String })
export type FieldError = typeof FieldError.Type

/**
 * At most this many entries: a 1 MiB body of bad values would otherwise give an answer of
 * megabytes. A client fixing a form shows the first ones; the rest come back on the next try.
 */
export const MAX_FIELD_ERRORS = 20

/** RFC 6901: `~` is `~0`, `/` is `~1`; the empty path is the whole document. */
export const jsonPointer = (path: ReadonlyArray<PropertyKey>): string =>
  path.map((key) => `/${String(key).replaceAll("~", "~0").replaceAll("/", "~1")}`).join("")

const describeIssue = SchemaIssue.makeFormatterDefault()

/**
 * Every leaf problem of a failed decoding (made with `errors: "all"`), in the order the schema
 * checked them, each with its pointer, at most `MAX_FIELD_ERRORS`. A union no alternative of
 * which fits is one entry at the union's place (its message lists the alternatives).
 */
export const fieldErrors = (issue: SchemaIssue.Issue): Array<FieldError> => {
  const found: Array<FieldError> = []
  const walk = (inner: SchemaIssue.Issue, path: ReadonlyArray<PropertyKey>): void => {
    if (found.length >= MAX_FIELD_ERRORS) return
    switch (inner._tag) {
      case "Pointer":
        walk(inner.issue, [...path, ...inner.path])
        return
      case "Encoding":
        walk(inner.issue, path)
        return
      case "Composite":
        for (const each of inner.issues) walk(each, path)
        return
      case "AnyOf": {
        // An alternative whose type fit reports broken rules inside it (`mobile_app` an object
        // with a bad field, not null): list those; when no alternative fits, the union is one entry.
        const fitting = inner.issues.filter(rulesOnly)
        if (fitting.length === 0) break
        for (const each of fitting) walk(each, path)
        return
      }
    }
    found.push({ pointer: jsonPointer(path), detail: describeIssue(inner) })
  }
  walk(issue, [])
  return found
}

/** Whether every leaf of an issue is a failed check on a well-typed value. */
const rulesOnly = (issue: SchemaIssue.Issue): boolean => {
  switch (issue._tag) {
    case "Filter":
      return true
    case "Pointer":
    case "Encoding":
      return rulesOnly(issue.issue)
    case "Composite":
      return issue.issues.every(rulesOnly)
    case "AnyOf":
      return issue.issues.some(rulesOnly)
    default:
      return false
  }
}
