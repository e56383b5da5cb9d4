import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { usableConnectionRows } from "../management/connections/repo.js"
import { identityCurrentFor } from "../social/repo.js"

/**
 * The user's authentication methods (docs/architecture.md, Last factor: a verified, unsuppressed email,
 * each passkey and each linked identity count as methods). An identity counts only while its
 * provider has a usable Connection in the Environment (active, not deleted, generic OIDC
 * confirmed): social login can start only with one (spec: Social login), so an identity of a
 * deleted or disabled Connection is no way to sign in; nor is a stale one, of an issuer or
 * subject claim the Connection no longer uses (docs/decisions/social-login.md, Social login: "Identities
 * carry their issuer"). Read inside the caller's SQL
 * transaction, after it locked the user row, so two concurrent deletions cannot both see the
 * other's method as the one that remains.
 */
export const authenticationMethodCount = (environmentId: string, userId: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{ n: number }>`select
      (select case when email_verified and not email_suppressed then 1 else 0 end from users
        where environment_id = ${environmentId} and id = ${userId})
      + (select count(*) from passkeys where environment_id = ${environmentId} and user_id = ${userId})
      + (select count(*) from identities i join (${usableConnectionRows(sql, environmentId)}) c on c.provider_key = i.provider
          where i.environment_id = ${environmentId} and i.user_id = ${userId} and ${identityCurrentFor(sql)}) as n`,
  ).pipe(Effect.map((rows) => Number(rows[0]?.n ?? 0)))
