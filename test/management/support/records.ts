import type { TestApp } from "../../support/app.js"
import { query } from "./db.js"

// What a Management request left behind: audit records and domain events in the outbox.

type AuditRow = {
  action: string
  actor_type: string
  actor_id: string | null
  environment_id: string | null
  subject_type: string | null
  subject_id: string | null
  result: string
  details: any
  request_id: string | null
}
const AUDIT_COLUMNS =
  "action, actor_type, actor_id, environment_id, subject_type, subject_id, result, details, request_id"

/** Audit records of a Workspace, oldest first, optionally of one action. */
export const workspaceAuditRows = (app: TestApp, workspaceId: string, action?: string) =>
  query<AuditRow>(
    app,
    `select ${AUDIT_COLUMNS} from audit_events
      where workspace_id = $1 ${action ? "and action = $2" : ""} order by created_at, id`,
    action ? [workspaceId, action] : [workspaceId],
  )

/** Audit records of an Environment, oldest first, optionally of one action. */
export const environmentAuditRows = (app: TestApp, environmentId: string, action?: string) =>
  query<AuditRow>(
    app,
    `select ${AUDIT_COLUMNS} from audit_events
      where environment_id = $1 ${action ? "and action = $2" : ""} order by created_at, id`,
    action ? [environmentId, action] : [environmentId],
  )

/** Actions and subjects of a Workspace's audit records, oldest first. */
export const workspaceAuditActions = (app: TestApp, workspaceId: string) =>
  query<{ action: string; subject_id: string | null }>(
    app,
    "select action, subject_id from audit_events where workspace_id = $1 order by created_at, id",
    [workspaceId],
  )

/** Audit actions of a subject by time (one request's records share a time: then by name). */
export const subjectAuditActions = async (app: TestApp, subjectId: string) =>
  (
    await query<{ action: string }>(
      app,
      "select action from audit_events where subject_id = $1 order by created_at, action",
      [subjectId],
    )
  ).map((r) => r.action)

/** Domain events of a Workspace in the outbox, oldest first (their envelopes). */
export const workspaceEvents = async (app: TestApp, workspaceId: string, type: string) =>
  (
    await query<{ envelope: any }>(
      app,
      "select envelope from event_outbox where workspace_id = $1 and type = $2 order by seq",
      [workspaceId, type],
    )
  ).map((r) => r.envelope)

/** Domain events of one Environment in the outbox, oldest first (type, envelope and payload). */
export const environmentEvents = async (app: TestApp, environmentId: string, type?: string) =>
  (
    await query<{ type: string; envelope: any }>(
      app,
      `select type, envelope from event_outbox where environment_id = $1 ${type ? "and type = $2" : ""} order by seq`,
      type ? [environmentId, type] : [environmentId],
    )
  ).map((r) => ({ type: r.type, envelope: r.envelope, payload: r.envelope.payload }))
