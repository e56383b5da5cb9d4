/**
 * Bounded concurrency per receiver (per origin: scheme, host and port), per process. A slow
 * or hanging receiver can hold at most `limit` sends of this process at once; the worker's
 * other job slots stay free for every other receiver. A send that finds its receiver's
 * slots full is not made: the attempt is deferred (see tasks.ts), never queued in memory.
 */
export interface TargetSlots {
  readonly tryAcquire: (origin: string) => boolean
  readonly release: (origin: string) => void
  readonly inFlight: (origin: string) => number
}

export const makeTargetSlots = (limit: number): TargetSlots => {
  const inFlight = new Map<string, number>()
  return {
    tryAcquire: (origin) => {
      const n = inFlight.get(origin) ?? 0
      if (n >= limit) return false
      inFlight.set(origin, n + 1)
      return true
    },
    release: (origin) => {
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
