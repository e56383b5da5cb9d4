/**
 * Bounded concurrency per receiver (per origin: scheme, host and port), per process. A slow
 * or hanging receiver can hold at most `limit` sends of this process at once; the worker's
 * other job slots stay free for every other receiver. A send that finds its receiver's slots
 * full waits briefly for one (a fast receiver frees a slot within milliseconds, so a burst to
 * one healthy receiver keeps flowing); if none frees in time the receiver is slow, and the
 * attempt is deferred (see tasks.ts), never queued in memory for long.
 */
export interface TargetSlots {
  readonly tryAcquire: (origin: string) => boolean
  /** Waits up to `waitMs` (real time: a scheduling matter, not a decision) for a slot. */
  readonly acquire: (origin: string, waitMs: number) => Promise<boolean>
  readonly release: (origin: string) => void
  readonly inFlight: (origin: string) => number
}

export const makeTargetSlots = (limit: number): TargetSlots => {
  const inFlight = new Map<string, number>()
  const waiters = new Map<string, Array<(granted: boolean) => void>>()
  const tryAcquire = (origin: string) => {
    const n = inFlight.get(origin) ?? 0
    if (n >= limit) return false
    inFlight.set(origin, n + 1)
    return true
  }
  return {
    tryAcquire,
    acquire: (origin, waitMs) => {
      if (tryAcquire(origin)) return Promise.resolve(true)
      return new Promise<boolean>((resolve) => {
        const queue = waiters.get(origin) ?? []
        waiters.set(origin, queue)
        const grant = (granted: boolean) => {
          clearTimeout(timer)
          resolve(granted)
        }
        const timer = setTimeout(() => {
          const i = queue.indexOf(grant)
          if (i >= 0) queue.splice(i, 1)
          if (queue.length === 0) waiters.delete(origin)
          resolve(false)
        }, waitMs)
        queue.push(grant)
      })
    },
    release: (origin) => {
      // A waiting send takes the slot over directly (the count stays the same).
      const queue = waiters.get(origin)
      const next = queue?.shift()
      if (queue && queue.length === 0) waiters.delete(origin)
      if (next) return next(true)
      const n = (inFlight.get(origin) ?? 1) - 1
      if (n <= 0) inFlight.delete(origin)
      else inFlight.set(origin, n)
    },
    inFlight: (origin) => inFlight.get(origin) ?? 0,
  }
}

/** The key of a receiver: its origin, so every path of one host shares its slots. */
export const targetOf = (url: string): string => {
  try {
    return new URL(url).origin
  } catch {
    return url
  }
}
