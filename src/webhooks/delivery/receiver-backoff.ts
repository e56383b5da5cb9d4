import { Effect, Random } from "effect"

/**
 * How long an attempt to a busy receiver is postponed (per origin, per process). Each
 * postponement of a receiver that stays busy doubles the next one, from FIRST_POSTPONEMENT_MS
 * up to MAX_POSTPONEMENT_MS; an answer from the receiver (any HTTP status: it is taking
 * requests again) resets it. So a receiver that hangs costs a bounded number of deferred jobs
 * per second whatever its backlog (about backlog / 30 s, at a low job priority), while one
 * that was only briefly busy gets its attempts again within a second. A postponement is not a
 * send: attempt numbers and the retry policy (spec: Delivery 6-7) are unchanged.
 */
export interface ReceiverBackoff {
  /** The postponement of the next deferred attempt to `origin` (ms), and one step more for the one after. */
  readonly postpone: (origin: string) => Effect.Effect<number>
  /** The receiver answered a send: its next postponement is the first one again. */
  readonly answered: (origin: string) => void
}

export const FIRST_POSTPONEMENT_MS = 1_000
export const MAX_POSTPONEMENT_MS = 30_000

/** Base postponement after `step` earlier ones without an answer: doubling from the first, capped. */
export const postponementBaseMs = (step: number) =>
  Math.min(MAX_POSTPONEMENT_MS, FIRST_POSTPONEMENT_MS * 2 ** Math.min(step, 16))

export const makeReceiverBackoff = (): ReceiverBackoff => {
  const steps = new Map<string, number>()
  return {
    // Equal jitter (as the retry gaps: 50-100 % of the base), so the postponed attempts of one
    // receiver spread out instead of coming due together.
    postpone: (origin) =>
      Effect.map(Random.next, (r) => {
        const step = steps.get(origin) ?? 0
        steps.set(origin, step + 1)
        const base = postponementBaseMs(step)
        return Math.floor(base / 2 + (base / 2) * r)
      }),
    answered: (origin) => {
      steps.delete(origin)
    },
  }
}
