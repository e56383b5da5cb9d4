import { SqlError } from "effect/sql"

/**
 * Whether a failure means the database could not be used right now (it is restarting, out of
 * reach, refusing connections, or the statement lost a race it may win on retry), as opposed to
 * a defect. Such a request answers 503 with Retry-After (spec: Errors; `server_error` on the OAuth
 * endpoints), never 500 (decisions: Production operation, "Every failure to reach the database").
 * Counted:
 * - the driver's retryable reasons (connection lost, statement or checkout bound, deadlock);
 * - any failure to open a connection (@effect/sql-pg's operation `connect`), whatever its
 *   SQLSTATE: a database that does not accept connections (55000), one being dropped or not
 *   there (3D000), refused credentials (28xxx) all leave the service without storage;
 * - SQLSTATE classes 08 (connection exception), 53 (insufficient resources: too many
 *   connections, out of memory or disk) and 57 (operator intervention: a restart terminates
 *   every session with 57P01).
 */
export const isStorageUnavailable = (error: unknown): boolean => {
  if (!SqlError.isSqlError(error)) return false
  if (error.isRetryable) return true
  if ((error.reason as { operation?: unknown }).operation === "connect") return true
  const code = sqlState(error)
  return code !== undefined && (code.startsWith("08") || code.startsWith("53") || code.startsWith("57"))
}

const sqlState = (error: SqlError.SqlError): string | undefined => {
  for (let e: unknown = error, depth = 0; e && typeof e === "object" && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code
    if (typeof code === "string" && /^[0-9A-Z]{5}$/.test(code)) return code
    e = (e as { cause?: unknown; reason?: unknown }).reason ?? (e as { cause?: unknown }).cause
  }
  return undefined
}
