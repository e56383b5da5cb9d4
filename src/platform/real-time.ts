import { Clock, Effect } from "effect"

/**
 * Waits in real time, not on the Effect Clock: for scheduling only (a back-off, a bounded wait for
 * other processes), never for a rule of the spec, so a test's TestClock neither fires it early nor
 * holds it for ever. Interrupting the wait clears its timer.
 */
export const pauseRealTime = (ms: number) =>
  Effect.callback<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), ms)
    return Effect.sync(() => clearTimeout(timer))
  })

/** The system clock, whatever Clock the caller runs with. */
const realClock = Clock.Clock.defaultValue()

/**
 * Runs an effect, typically a `Schedule` (`Effect.retry`, `Effect.repeat`), on the system clock
 * for the same reason as `pauseRealTime`: its waits are scheduling, so a TestClock must not hold them.
 */
export const onRealClock = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.provideService(effect, Clock.Clock, realClock)
