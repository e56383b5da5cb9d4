import { Effect } from "effect"
import { InvalidRequest } from "../../http/errors.js"
import type { EnvironmentRecord } from "../../tenancy/schema.js"
import type { Page } from "../conventions/pagination.js"
import * as repo from "./repo.js"
import { parseInstant } from "./schema.js"

/** The cursor is `<created_at, microseconds, UTC>|<id>` of the last row (opaque base64url on the wire). */
export const cursorOf = (row: repo.AuditEventRow) => `${row.cursor_at}|${row.id}`

const parseCursor = (after: string | undefined) => {
  if (after === undefined) return Effect.succeed(undefined)
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z)\|(\w{1,100})$/.exec(after)
  return m
    ? Effect.succeed({ at: m[1]!, id: m[2]! })
    : Effect.fail(new InvalidRequest({ detail: "cursor is not valid" }))
}

export interface AuditQuery {
  readonly actor_type?: string | undefined
  readonly action?: string | undefined
  readonly subject_type?: string | undefined
  readonly subject_id?: string | undefined
  readonly result?: string | undefined
  readonly created_after?: string | undefined
  readonly created_before?: string | undefined
}

/** Audit records of one Environment, newest first (the table is append-only: no update or delete route). */
export const listAuditEvents = Effect.fnUntraced(function* (env: EnvironmentRecord, query: AuditQuery, page: Page) {
  const after = yield* parseCursor(page.after)
  return yield* repo
    .listAuditEvents(
      {
        environmentId: env.id,
        actorType: query.actor_type,
        action: query.action,
        subjectType: query.subject_type,
        subjectId: query.subject_id,
        result: query.result,
        createdAfter: query.created_after === undefined ? undefined : parseInstant(query.created_after),
        createdBefore: query.created_before === undefined ? undefined : parseInstant(query.created_before),
      },
      { after, limit: page.limit },
    )
    .pipe(Effect.orDie)
})
