import { Schema } from "effect"

/** The hostname is already a Custom Domain (of any Environment: a host routes to one only). */
export class DomainAlreadyExists extends Schema.TaggedError<DomainAlreadyExists>()("DomainAlreadyExists", {
  detail: Schema.String,
}) {}
