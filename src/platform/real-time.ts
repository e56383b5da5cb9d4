import { Effect } from "effect"

/**
 * Waits in real time, not on the Effect Clock: for scheduling only (a back-off, a bounded wait for
 * other processes), never for a rule of the spec, so a test's TestClock neither fires it early nor
 * holds it for ever. Interrupting the wait clears its timer.
 */
export const pauseRealTime = (ms: number) => Effect.callback<void>((resume) => {
  const timer = setTimeout(() => resume(Effect.void), ms)
  return Effect.sync(() => clearTimeout(timer))
})
