import { Effect, Schema } from "effect"
import { InvalidRequest } from "../../http/errors.js"

/** `limit` (default 25, max 100) and an opaque `cursor` (spec: Management common rule 1). */
export const PageQuery = {
  limit: Schema.optionalKey(Schema.String),
  cursor: Schema.optionalKey(Schema.String),
}

export interface Page {
  readonly limit: number
  /** The sort key after which the page starts (keyset pagination: stable under inserts). */
  readonly after: string | undefined
}

export const parsePage = (query: {
  readonly limit?: string | undefined
  readonly cursor?: string | undefined
}): Effect.Effect<Page, InvalidRequest> => {
  let limit = 25
  if (query.limit !== undefined) {
    if (!/^\d{1,3}$/.test(query.limit) || Number(query.limit) < 1 || Number(query.limit) > 100) {
      return Effect.fail(new InvalidRequest({ detail: "limit must be an integer from 1 to 100" }))
    }
    limit = Number(query.limit)
  }
  let after: string | undefined
  if (query.cursor !== undefined) {
    const decoded = Buffer.from(query.cursor, "base64url").toString("utf8")
    if (!/^[\w.:|-]{1,300}$/.test(decoded) || Buffer.from(decoded).toString("base64url") !== query.cursor) {
      return Effect.fail(new InvalidRequest({ detail: "cursor is not valid" }))
    }
    after = decoded
  }
  return Effect.succeed({ limit, after })
}

/**
 * Builds `{data, next_cursor}` from rows fetched with `limit + 1`: the extra row only
 * tells whether another page exists.
 */
export const pageOf = <Row, Out>(
  rows: ReadonlyArray<Row>,
  page: Page,
  keyOf: (row: Row) => string,
  present: (row: Row) => Out,
) => {
  const visible = rows.slice(0, page.limit)
  const last = visible[visible.length - 1]
  return {
    data: visible.map(present),
    next_cursor: rows.length > page.limit && last !== undefined ? Buffer.from(keyOf(last)).toString("base64url") : null,
  }
}
