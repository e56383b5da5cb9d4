import { describe, expect, it } from "@effect/vitest"
import { Effect, Random } from "effect"
import { TestClock } from "effect/testing"
import {
  FIRST_POSTPONEMENT_MS,
  makeReceiverBackoff,
  MAX_POSTPONEMENT_MS,
  postponementBaseMs,
} from "../../src/webhooks/delivery/receiver-backoff.js"

// Attempts to a busy receiver are postponed, not sent: the postponement doubles each time the
// receiver is still busy a whole postponement later (1 s, 2 s, 4 s, ... capped at 30 s, 50-100 %
// jitter), per receiver; an answer from it resets it. The count of attempts that find it busy
// does not matter: a burst of fan-outs during one slow send must not push a healthy receiver's
// attempts to the cap (a CI run saw a healthy receiver's last events wait past 25 s that way).

const within = (ms: number, step: number) => {
  const base = postponementBaseMs(step)
  expect(ms).toBeGreaterThanOrEqual(base / 2)
  expect(ms).toBeLessThan(base)
}

describe("postponements of a busy receiver", () => {
  it("double per step up to the cap", () => {
    expect([0, 1, 2, 3, 4, 5, 6, 40].map(postponementBaseMs)).toEqual([
      1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000,
    ])
    expect(postponementBaseMs(0)).toBe(FIRST_POSTPONEMENT_MS)
    expect(postponementBaseMs(1_000)).toBe(MAX_POSTPONEMENT_MS)
  })

  it.effect("a burst of attempts at one busy moment all get the first postponement", () =>
    Effect.gen(function* () {
      const backoff = makeReceiverBackoff()
      for (let i = 0; i < 200; i++) within(yield* backoff.postpone("https://burst.example"), 0)
      yield* TestClock.adjust("999 millis")
      within(yield* backoff.postpone("https://burst.example"), 0)
    }).pipe(Random.withSeed("receiver-backoff-burst")),
  )

  it.effect(
    "grows with the time the receiver stays busy, per receiver, up to the cap; an answer from that receiver resets it",
    () =>
      Effect.gen(function* () {
        const backoff = makeReceiverBackoff()
        const slow = "https://slow.example"
        const other = "https://other.example"
        within(yield* backoff.postpone(slow), 0)
        // Each step holds for its own base, then the next one begins: 1 s, 2 s, 4 s, 8 s, 16 s, 30 s.
        for (let step = 1; step <= 7; step++) {
          yield* TestClock.adjust(postponementBaseMs(step - 1))
          within(yield* backoff.postpone(slow), step)
          within(yield* backoff.postpone(slow), step)
        }
        within(yield* backoff.postpone(slow), 40)
        // Another receiver's postponements are its own.
        within(yield* backoff.postpone(other), 0)
        backoff.answered(slow)
        within(yield* backoff.postpone(slow), 0)
        // The other receiver, still busy a second later, takes its next step.
        yield* TestClock.adjust(FIRST_POSTPONEMENT_MS)
        within(yield* backoff.postpone(other), 1)
      }).pipe(Random.withSeed("receiver-backoff")),
  )
})
