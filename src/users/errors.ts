import { Schema } from "effect"

// Failures of the shared user rules (Management API, login, /me). Mapped in src/http/problems.ts.

/** Spec Errors table: 409 `email_already_registered` (email conflict within one Environment). */
export class EmailAlreadyRegistered extends Schema.TaggedError<EmailAlreadyRegistered>()("EmailAlreadyRegistered", {
  detail: Schema.optionalKey(Schema.String),
}) {}
