import { Clock, Effect, Random } from "effect"

/**
 * How long an attempt to a busy receiver is postponed (per origin, per process). The
 * postponement grows with how long the receiver has stayed busy, not with how many attempts
 * found it busy: it starts at FIRST_POSTPONEMENT_MS and doubles each time the receiver is still
 * busy a whole postponement later, up to MAX_POSTPONEMENT_MS; an answer from the receiver (any
 * HTTP status: it is taking requests again) resets it. So a receiver that hangs costs a bounded
 * number of deferred jobs per second whatever its backlog (about backlog / 30 s once it has hung
 * for half a minute, at a low job priority), while a burst that finds a healthy receiver busy for
 * a moment (one send slower than the prompt window, hundreds of fan-outs in that moment) gets its
 * attempts again within a second instead of climbing to the cap one postponement at a time. A
 * postponement is not a send: attempt numbers and the retry policy (spec: Delivery 6-7) are unchanged.
 */
export interface ReceiverBackoff {
  /** The postponement of the next deferred attempt to `origin` (ms). */
  readonly postpone: (origin: string) => Effect.Effect<number>
  /** The receiver answered a send: its next postponement is the first one again. */
  readonly answered: (origin: string) => void
}

export const FIRST_POSTPONEMENT_MS = 1_000
export const MAX_POSTPONEMENT_MS = 30_000

/** Base postponement after `step` doublings: from the first, capped. */
export const postponementBaseMs = (step: number) =>
  Math.min(MAX_POSTPONEMENT_MS, FIRST_POSTPONEMENT_MS * 2 ** Math.min(step, 16))

/** Where a busy receiver's postponements stand: their step, and since when (ms) it holds. */
interface Busy {
  step: number
  since: number
}

export const makeReceiverBackoff = (): ReceiverBackoff => {
  const busy = new Map<string, Busy>()
  return {
    postpone: (origin) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const r = yield* Random.next
        let state = busy.get(origin)
        if (state === undefined) {
          state = { step: 0, since: now }
          busy.set(origin, state)
        } else if (now - state.since >= postponementBaseMs(state.step)) {
          // Still busy a whole postponement after this step began: the next step.
          state.step = Math.min(state.step + 1, 16)
          state.since = now
        }
        const base = postponementBaseMs(state.step)
        // Equal jitter (as the retry gaps: 50-100 % of the base), so the postponed attempts of one
        // receiver spread out instead of coming due together.
        return Math.floor(base / 2 + (base / 2) * r)
      }),
    answered: (origin) => {
      busy.delete(origin)
    },
  }
}
