import { Effect } from "effect"
import { BoundedMap } from "../../platform/bounded-map.js"

/**
 * Bounded concurrency per receiver (per origin: scheme, host and port), per process. A slow
 * or hanging receiver can hold at most `limit` sends of this process at once; the worker's
 * other job slots stay free for every other receiver. A send that finds its receiver's slots
 * full is deferred at once (see tasks.ts): a job never waits for a slow receiver while it holds
 * a job slot. The one exception is a receiver that is answering promptly: when every send it
 * holds began less than `promptMs` ago, a slot frees soon, so the send waits up
 * to `promptMs` for one (a burst to one healthy receiver keeps flowing instead of turning into
 * deferred jobs).
 *
 * Slots are taken and given back by `withSlot` only, so that no path loses one: the slot is
 * released on every exit of the send (success, failure, defect, interruption), and a send that
 * is interrupted while it waits leaves the queue and is never handed a slot (one handed to it at
 * that very moment is passed on).
 */
export interface TargetSlots {
  /** Runs `send` holding one of `origin`'s slots, or `busy` when none is free. */
  readonly withSlot: <A, E, R, B, E2, R2>(
    origin: string,
    send: Effect.Effect<A, E, R>,
    busy: Effect.Effect<B, E2, R2>,
  ) => Effect.Effect<A | B, E | E2, R | R2>
  /** Sends holding a slot of `origin` now. */
  readonly inFlight: (origin: string) => number
  /** Sends waiting for a slot of `origin` now. */
  readonly waiting: (origin: string) => number
}

/** A receiver whose sends all began within this many ms is answering promptly (real time: scheduling, not a decision). */
export const PROMPT_MS = 250

interface Ticket {
  readonly origin: string
  state: "waiting" | "granted" | "refused" | "cancelled"
  /** performance.now() when the slot was granted. */
  grantedAt: number
  wake: ((granted: boolean) => void) | undefined
  timer: ReturnType<typeof setTimeout> | undefined
}

export const makeTargetSlots = (limit: number, options: { readonly promptMs?: number } = {}): TargetSlots => {
  const promptMs = options.promptMs ?? PROMPT_MS
  const holders = new Map<string, Set<Ticket>>()
  const queues = new Map<string, Array<Ticket>>()

  const hold = (ticket: Ticket) => {
    ticket.state = "granted"
    ticket.grantedAt = performance.now()
    const held = holders.get(ticket.origin) ?? new Set<Ticket>()
    holders.set(ticket.origin, held)
    held.add(ticket)
  }

  const leaveQueue = (ticket: Ticket) => {
    clearTimeout(ticket.timer)
    const queue = queues.get(ticket.origin)
    if (!queue) return
    const i = queue.indexOf(ticket)
    if (i >= 0) queue.splice(i, 1)
    if (queue.length === 0) queues.delete(ticket.origin)
  }

  const take = (origin: string): Ticket => {
    const ticket: Ticket = { origin, state: "refused", grantedAt: 0, wake: undefined, timer: undefined }
    const held = holders.get(origin)
    if ((held?.size ?? 0) < limit) {
      hold(ticket)
      return ticket
    }
    const now = performance.now()
    const prompt = promptMs > 0 && [...held!].every((h) => now - h.grantedAt < promptMs)
    if (!prompt) return ticket
    ticket.state = "waiting"
    const queue = queues.get(origin) ?? []
    queues.set(origin, queue)
    queue.push(ticket)
    ticket.timer = setTimeout(() => {
      leaveQueue(ticket)
      ticket.state = "refused"
      ticket.wake?.(false)
    }, promptMs)
    return ticket
  }

  /** Gives the slot back: the first waiter takes it over, else the count drops. */
  const release = (ticket: Ticket) => {
    const held = holders.get(ticket.origin)
    if (ticket.state !== "granted" || !held?.delete(ticket)) return
    ticket.state = "cancelled"
    const next = queues.get(ticket.origin)?.[0]
    if (next) {
      leaveQueue(next)
      hold(next)
      next.wake?.(true)
    }
    if (held.size === 0) holders.delete(ticket.origin)
  }

  /** An interrupted waiter: out of the queue, or, if a slot reached it meanwhile, that slot passed on. */
  const cancel = (ticket: Ticket) => {
    if (ticket.state === "waiting") {
      leaveQueue(ticket)
      ticket.state = "cancelled"
    } else if (ticket.state === "granted") {
      release(ticket)
    }
  }

  const outcome = (ticket: Ticket) =>
    Effect.callback<boolean>((resume) => {
      if (ticket.state !== "waiting") return resume(Effect.succeed(ticket.state === "granted"))
      ticket.wake = (granted) => resume(Effect.succeed(granted))
    })

  const withSlot = <A, E, R, B, E2, R2>(origin: string, send: Effect.Effect<A, E, R>, busy: Effect.Effect<B, E2, R2>) =>
    Effect.uninterruptibleMask((restore) =>
      Effect.suspend(() => {
        const ticket = take(origin)
        return restore(outcome(ticket)).pipe(
          Effect.onInterrupt(() => Effect.sync(() => cancel(ticket))),
          Effect.flatMap(
            (granted): Effect.Effect<A | B, E | E2, R | R2> =>
              granted ? restore(send).pipe(Effect.ensuring(Effect.sync(() => release(ticket)))) : restore(busy),
          ),
        )
      }),
    )

  return {
    withSlot,
    inFlight: (origin) => holders.get(origin)?.size ?? 0,
    waiting: (origin) => queues.get(origin)?.length ?? 0,
  }
}

/** Origins of the URLs seen last (each URL parsed once, not once per send). */
const ORIGINS_CAPACITY = 1_000
const origins = new BoundedMap<string, string>(ORIGINS_CAPACITY)

/** The key of a receiver: its origin, so every path of one host shares its slots. */
export const targetOf = (url: string): string => {
  const held = origins.get(url)
  if (held !== undefined) return held
  let origin: string
  try {
    origin = new URL(url).origin
  } catch {
    origin = url
  }
  origins.store(url, origin)
  return origin
}
