import { Clock, Effect, Random } from "effect"

/**
 * The retry policy of webhook deliveries (spec: Events, Delivery rules 6-7; Limits).
 * Pure: the verdict depends only on the attempt number and what the send produced; the
 * time of the next attempt comes from Effect Clock and Random, so TestClock and a seeded
 * Random make it exact in tests (graphile-worker then runs the job at that `run_at`).
 */

/** At most 8 sends, the first included. */
export const MAX_SENDS = 8

/** Base gap before retry n (n = 1..7): 30 s, 1 min, 5 min, 15 min, 30 min, 1 h, 6 h. */
export const RETRY_GAP_BASES_MS: ReadonlyArray<number> = [
  30_000,
  60_000,
  5 * 60_000,
  15 * 60_000,
  30 * 60_000,
  3600_000,
  6 * 3600_000,
]

/** What a send produced, as far as the policy cares. */
export type SendResult = { readonly kind: "response"; readonly status: number } | { readonly kind: "no_response" } // network error, blocked address, time-out

/**
 * - 2xx: delivered.
 * - 410: permanent at once.
 * - 429: always retryable.
 * - any other 4xx: retryable on sends 1-2, permanent from the 3rd send on (every failed
 *   send counts, docs/architecture.md).
 * - no response, 1xx/3xx/5xx: retryable.
 */
export const classify = (attempt: number, result: SendResult): "delivered" | "permanent" | "retryable" => {
  if (result.kind === "no_response") return "retryable"
  const status = result.status
  if (status >= 200 && status < 300) return "delivered"
  if (status === 410) return "permanent"
  if (status === 429) return "retryable"
  if (status >= 400 && status < 500) return attempt >= 3 ? "permanent" : "retryable"
  return "retryable"
}

/** Equal jitter: a uniformly random gap in [50%, 100%) of the base before retry number `retry`. */
export const retryGapMs = (retry: number) =>
  Effect.map(Random.next, (r) => {
    const base = RETRY_GAP_BASES_MS[retry - 1]!
    return Math.floor(base / 2 + (base / 2) * r)
  })

export type Verdict =
  | { readonly status: "delivered" }
  | { readonly status: "exhausted"; readonly why: "permanent" | "attempts_used" }
  | { readonly status: "failed"; readonly nextAttempt: number; readonly gapMs: number; readonly runAt: Date }

/** The status of attempt `attempt` and, when it failed, when the next one runs. */
export const decide = (attempt: number, result: SendResult): Effect.Effect<Verdict> =>
  Effect.gen(function* () {
    const kind = classify(attempt, result)
    if (kind === "delivered") return { status: "delivered" } as const
    if (kind === "permanent") return { status: "exhausted", why: "permanent" } as const
    if (attempt >= MAX_SENDS) return { status: "exhausted", why: "attempts_used" } as const
    const gapMs = yield* retryGapMs(attempt)
    const now = yield* Clock.currentTimeMillis
    return { status: "failed", nextAttempt: attempt + 1, gapMs, runAt: new Date(now + gapMs) } as const
  })
