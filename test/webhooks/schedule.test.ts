import { describe, expect, it } from "@effect/vitest"
import { Effect, Random } from "effect"
import { TestClock } from "effect/testing"
import {
  classify,
  decide,
  MAX_SENDS,
  RETRY_GAP_BASES_MS,
  retryGapMs,
  type SendResult,
} from "../../src/webhooks/schedule.js"

// Spec, Events, Delivery rules 6-7 and Limits: only 2xx succeeds; 410 permanent at once;
// 429 retried; other 4xx permanent from the 3rd failure on; gaps 30 s, 1 min, 5 min,
// 15 min, 30 min, 1 h, 6 h with equal jitter (50-100 %); at most 8 sends.

const response = (status: number): SendResult => ({ kind: "response", status })
const noResponse: SendResult = { kind: "no_response" }

describe("classify", () => {
  it("only a 2xx is delivered", () => {
    for (const status of [200, 201, 202, 204, 299]) expect(classify(1, response(status))).toBe("delivered")
    for (const status of [100, 199, 300, 301, 302, 304, 307, 308, 500, 502, 503, 504])
      expect(classify(1, response(status))).toBe("retryable")
  })
  it("410 is permanent at the first send", () => {
    expect(classify(1, response(410))).toBe("permanent")
  })
  it("429 is retried at every send", () => {
    for (let attempt = 1; attempt <= MAX_SENDS; attempt++) expect(classify(attempt, response(429))).toBe("retryable")
  })
  it("other 4xx are retried on sends 1 and 2, permanent from the 3rd failure on", () => {
    for (const status of [400, 401, 403, 404, 405, 409, 422, 499]) {
      expect(classify(1, response(status))).toBe("retryable")
      expect(classify(2, response(status))).toBe("retryable")
      expect(classify(3, response(status))).toBe("permanent")
      expect(classify(7, response(status))).toBe("permanent")
    }
  })
  it("network errors and time-outs are retried", () => {
    expect(classify(1, noResponse)).toBe("retryable")
    expect(classify(7, noResponse)).toBe("retryable")
  })
})

describe("retry gaps (pure, from Clock and Random)", () => {
  it.effect("each gap lies in [50 %, 100 %) of its base and run_at = Clock now + gap", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(Date.UTC(2025, 0, 1))
      const start = Date.UTC(2025, 0, 1)
      expect(RETRY_GAP_BASES_MS).toEqual([30_000, 60_000, 300_000, 900_000, 1_800_000, 3_600_000, 21_600_000])
      for (let attempt = 1; attempt < MAX_SENDS; attempt++) {
        const verdict = yield* decide(attempt, response(503))
        const base = RETRY_GAP_BASES_MS[attempt - 1]!
        expect(verdict.status).toBe("failed")
        if (verdict.status !== "failed") return
        expect(verdict.nextAttempt).toBe(attempt + 1)
        expect(verdict.gapMs).toBeGreaterThanOrEqual(base / 2)
        expect(verdict.gapMs).toBeLessThan(base)
        expect(verdict.runAt.getTime()).toBe(start + verdict.gapMs)
      }
    }).pipe(Random.withSeed("webhook-gaps")),
  )

  it.effect("the same seed gives the same schedule; the clock moves run_at", () =>
    Effect.gen(function* () {
      const schedule = Effect.forEach([1, 2, 3, 4, 5, 6, 7], (retry) => retryGapMs(retry))
      const a = yield* schedule.pipe(Random.withSeed(42))
      const b = yield* schedule.pipe(Random.withSeed(42))
      const c = yield* schedule.pipe(Random.withSeed(43))
      expect(a).toEqual(b)
      expect(a).not.toEqual(c)
      yield* TestClock.setTime(1_000_000)
      const first = yield* decide(1, noResponse).pipe(Random.withSeed(7))
      yield* TestClock.adjust("1 hour")
      const later = yield* decide(1, noResponse).pipe(Random.withSeed(7))
      if (first.status !== "failed" || later.status !== "failed") throw new Error("expected failed verdicts")
      expect(later.gapMs).toBe(first.gapMs)
      expect(later.runAt.getTime() - first.runAt.getTime()).toBe(3_600_000)
    }),
  )

  it.effect("jitter spans the whole band over many draws", () =>
    Effect.gen(function* () {
      const draws = yield* Effect.forEach(Array.from({ length: 2000 }), () => retryGapMs(1))
      expect(Math.min(...draws)).toBeGreaterThanOrEqual(15_000)
      expect(Math.max(...draws)).toBeLessThan(30_000)
      // equal jitter: uniform over [15 s, 30 s), so both halves of the band are used
      expect(draws.filter((d) => d < 22_500).length).toBeGreaterThan(800)
      expect(draws.filter((d) => d >= 22_500).length).toBeGreaterThan(800)
    }).pipe(Random.withSeed("spread")),
  )
})

describe("decide", () => {
  it.effect("2xx delivered; 410 exhausted at once; 400 exhausted at the 3rd send; 8th failure exhausted", () =>
    Effect.gen(function* () {
      expect(yield* decide(1, response(204))).toEqual({ status: "delivered" })
      expect(yield* decide(1, response(410))).toEqual({ status: "exhausted", why: "permanent" })
      expect((yield* decide(2, response(400))).status).toBe("failed")
      expect(yield* decide(3, response(400))).toEqual({ status: "exhausted", why: "permanent" })
      expect((yield* decide(7, response(429))).status).toBe("failed")
      expect(yield* decide(8, response(429))).toEqual({ status: "exhausted", why: "attempts_used" })
      expect(yield* decide(8, noResponse)).toEqual({ status: "exhausted", why: "attempts_used" })
      expect(yield* decide(8, response(200))).toEqual({ status: "delivered" })
    }).pipe(Random.withSeed(1)),
  )
})
