import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"

/**
 * A Workspace or Project slug: lower-case letters, digits and inner hyphens, 1 to 48
 * characters (the form `slugify` derives from a name). Recorded in docs/decisions/management-api.md.
 */
export const Slug = Schema.String.check(
  Schema.isPattern(/^[a-z0-9](?:[a-z0-9-]{0,46}[a-z0-9])?$/, {
    description: "lower-case letters, digits and inner hyphens, 1 to 48 characters",
  }),
)

/** A display name: 1 to 100 characters, not only white space. */
export const Name = Schema.String.check(
  Schema.isBetweenLength(1, 100),
  Schema.isPattern(/\S/, { description: "not blank" }),
)

/** The slug is already used (Workspace slugs are global, Project slugs per Workspace). */
export class SlugTaken extends Schema.TaggedError<SlugTaken>()("SlugTaken", {
  detail: Schema.optionalKey(Schema.String),
}) {}

/**
 * Serialises the check-then-insert of one slug for the rest of the transaction, so two
 * concurrent creations with the same slug give one 201 and one 409, never a 500.
 */
export const lockSlug = (namespace: string, slug: string) =>
  SqlClient.SqlClient.use(
    (sql) => sql`select pg_advisory_xact_lock(hashtextextended(${`${namespace}:${slug}`}, 0))`,
  ).pipe(Effect.asVoid)
