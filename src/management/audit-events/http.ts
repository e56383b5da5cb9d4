import { Effect } from "effect"
import { json } from "../../http/route.js"
import { environmentForCaller } from "../auth/access.js"
import { endpoint } from "../conventions/endpoint.js"
import { pageOf, parsePage } from "../conventions/pagination.js"
import type { AuditEventRow } from "./repo.js"
import { AuditEventList, ListAuditEventsQuery } from "./schema.js"
import * as service from "./service.js"

const present = (row: AuditEventRow) => ({
  id: row.id,
  workspace_id: row.workspace_id,
  environment_id: row.environment_id,
  actor_type: row.actor_type,
  actor_id: row.actor_id,
  action: row.action,
  subject_type: row.subject_type,
  subject_id: row.subject_id,
  result: row.result,
  request_id: row.request_id,
  details: row.details,
  created_at: row.created_at.toISOString(),
})

export const auditEventRoutes = [
  endpoint(
    {
      method: "GET",
      path: "/v1/audit-events",
      summary: "List audit events of an Environment, newest first (append-only: no update or delete)",
      tags: ["Audit events"],
      scope: "audit_events:read",
      query: ListAuditEventsQuery,
      response: AuditEventList,
    },
    ({ query }) =>
      Effect.gen(function* () {
        const env = yield* environmentForCaller(query.environment_id)
        const page = yield* parsePage(query)
        const rows = yield* service.listAuditEvents(env, query, page)
        return json(pageOf(rows, page, service.cursorOf, present))
      }),
  ),
]
