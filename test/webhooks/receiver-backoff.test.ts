import { describe, expect, it } from "@effect/vitest"
import { Effect, Random } from "effect"
import {
  FIRST_POSTPONEMENT_MS,
  makeReceiverBackoff,
  MAX_POSTPONEMENT_MS,
  postponementBaseMs,
} from "../../src/webhooks/delivery/receiver-backoff.js"

// Attempts to a busy receiver are postponed, not sent: each postponement of a receiver that
// stays busy doubles the next (1 s, 2 s, 4 s, ... capped at 30 s, 50-100 % jitter), per
// receiver; an answer from it resets them.

describe("postponements of a busy receiver", () => {
  it("double per postponement up to the cap", () => {
    expect([0, 1, 2, 3, 4, 5, 6, 40].map(postponementBaseMs)).toEqual([
      1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000,
    ])
    expect(postponementBaseMs(0)).toBe(FIRST_POSTPONEMENT_MS)
    expect(postponementBaseMs(1_000)).toBe(MAX_POSTPONEMENT_MS)
  })

  it.effect(
    "each lies in [50 %, 100 %) of its base, grows per receiver, and an answer from that receiver resets it",
    () =>
      Effect.gen(function* () {
        const backoff = makeReceiverBackoff()
        const slow = "https://slow.example"
        const other = "https://other.example"
        const steps: Array<number> = []
        for (let i = 0; i < 8; i++) steps.push(yield* backoff.postpone(slow))
        steps.forEach((ms, i) => {
          const base = postponementBaseMs(i)
          expect(ms).toBeGreaterThanOrEqual(base / 2)
          expect(ms).toBeLessThan(base)
        })
        // Another receiver's postponements are its own.
        expect(yield* backoff.postpone(other)).toBeLessThan(FIRST_POSTPONEMENT_MS)
        backoff.answered(slow)
        const again = yield* backoff.postpone(slow)
        expect(again).toBeGreaterThanOrEqual(FIRST_POSTPONEMENT_MS / 2)
        expect(again).toBeLessThan(FIRST_POSTPONEMENT_MS)
      }).pipe(Random.withSeed("receiver-backoff")),
  )
})
