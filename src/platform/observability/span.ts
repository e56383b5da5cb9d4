import { Effect, type Tracer } from "effect"

/**
 * `Effect.withSpan` without the stack trace, the one way this codebase opens a span. Most
 * of our spans wrap an effect built on every call (a grant, a token mint, an event, a job),
 * and by default each call then makes an Error to record where the span was defined, which
 * the span's name already says (docs/decisions/performance.md: 2% of a refresh's CPU).
 */
export const withCallSpan = (name: string, options?: Tracer.SpanOptionsNoTrace) =>
  Effect.withSpan(name, options, { captureStackTrace: false })
