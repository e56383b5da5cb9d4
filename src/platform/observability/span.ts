import { Effect } from "effect"

/**
 * `Effect.withSpan` for code that builds its effect on every call (a grant, a token mint, an
 * event): without `captureStackTrace: false` each call makes an Error to record where the span
 * was defined, which the span's name already says (issue 13: 2% of a refresh's CPU).
 */
export const withCallSpan = (name: string, options?: { readonly attributes?: Record<string, unknown> }) =>
  Effect.withSpan(name, options, { captureStackTrace: false })
