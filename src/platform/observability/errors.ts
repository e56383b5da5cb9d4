import { Schema } from "effect"

/** The Prometheus endpoint requires `Authorization: Bearer $METRICS_TOKEN` when it is configured (RFC 6750). */
export class MetricsTokenRequired extends Schema.TaggedError<MetricsTokenRequired>()("MetricsTokenRequired", {
  wwwAuthenticate: Schema.String,
}) {}
