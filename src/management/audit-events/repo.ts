import { SqlClient } from "effect/sql"

export interface AuditEventRow {
  readonly id: string
  readonly workspace_id: string
  readonly environment_id: string | null
  readonly actor_type: "end_user" | "workspace_member" | "api_key" | "system"
  readonly actor_id: string | null
  readonly action: string
  readonly subject_type: string | null
  readonly subject_id: string | null
  readonly result: "success" | "failure"
  readonly request_id: string | null
  readonly details: Record<string, unknown>
  readonly created_at: Date
  /** `created_at` at full (microsecond) precision, UTC: the cursor's time component. */
  readonly cursor_at: string
}

export interface AuditFilter {
  readonly environmentId: string
  readonly actorType?: string | undefined
  readonly action?: string | undefined
  readonly subjectType?: string | undefined
  readonly subjectId?: string | undefined
  readonly result?: string | undefined
  readonly createdAfter?: Date | undefined
  readonly createdBefore?: Date | undefined
}

export interface AuditPage {
  readonly after: { readonly at: string; readonly id: string } | undefined
  readonly limit: number
}

/**
 * One page, newest first: keyset on (created_at desc, id desc), served by the indexes
 * audit_events_env_page / _env_action / _env_subject (sql/0002) and _env_subject_id,
 * _env_actor (sql/0007), whose column order is the sort order.
 */
export const listAuditEventsStatement = (sql: SqlClient.SqlClient, f: AuditFilter, page: AuditPage) => {
  const where = [sql`environment_id = ${f.environmentId}`]
  if (f.actorType !== undefined) where.push(sql`actor_type = ${f.actorType}`)
  if (f.action !== undefined) where.push(sql`action = ${f.action}`)
  if (f.subjectType !== undefined) where.push(sql`subject_type = ${f.subjectType}`)
  if (f.subjectId !== undefined) where.push(sql`subject_id = ${f.subjectId}`)
  if (f.result !== undefined) where.push(sql`result = ${f.result}`)
  if (f.createdAfter !== undefined) where.push(sql`created_at > ${f.createdAfter}`)
  if (f.createdBefore !== undefined) where.push(sql`created_at < ${f.createdBefore}`)
  if (page.after !== undefined) where.push(sql`(created_at, id) < (${page.after.at}::timestamptz, ${page.after.id})`)
  return sql<AuditEventRow>`select id, workspace_id, environment_id, actor_type, actor_id, action, subject_type, subject_id,
        result, request_id, details, created_at,
        to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as cursor_at
      from audit_events where ${sql.and(where)}
      order by created_at desc, id desc limit ${page.limit + 1}`
}

export const listAuditEvents = (f: AuditFilter, page: AuditPage) =>
  SqlClient.SqlClient.use((sql) => listAuditEventsStatement(sql, f, page))
