import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** The Environment's theme object (spec: "A theme object exists per Environment"; its schema is the Theme routes'). */
export const environmentTheme = (environmentId: string) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ theme: Record<string, unknown> }>`select theme from environments where id = ${environmentId}`,
  ).pipe(
    Effect.map((rows) => rows[0]?.theme ?? {}),
    Effect.orDie,
  )
