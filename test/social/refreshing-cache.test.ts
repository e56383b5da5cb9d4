import { describe, expect, it } from "vitest"
import { type CachePolicy, makeRefreshingCache, maxAgeOf } from "../../src/social/providers/refreshing-cache.js"

// The per-process cache behind provider discovery (src/social/providers/refreshing-cache.ts):
// time is passed in (the callers pass Effect Clock time), so expiry needs no waiting.

const POLICY: CachePolicy = {
  defaultTtlMs: 3600_000,
  minTtlMs: 300_000,
  maxTtlMs: 86_400_000,
  retryAfterFailureMs: 60_000,
  maxEntries: 3,
}

/** A load that counts its calls and answers what the test says. */
const source = () => {
  let calls = 0
  let next: () => Promise<{ value: string; maxAgeMs?: number }> = async () => ({ value: `v${calls}` })
  return {
    load: () => {
      calls++
      return next()
    },
    calls: () => calls,
    answer: (f: typeof next) => {
      next = f
    },
  }
}

describe("refreshing cache", () => {
  it("concurrent misses share one load; a fresh entry needs none", async () => {
    const cache = makeRefreshingCache<string>(POLICY)
    const s = source()
    let release!: () => void
    s.answer(
      () =>
        new Promise((resolve) => {
          release = () => resolve({ value: "doc" })
        }),
    )
    const all = Promise.all(Array.from({ length: 5 }, () => cache.get("k", 0, s.load)))
    release()
    expect(await all).toEqual(Array(5).fill("doc"))
    expect(await cache.get("k", 3599_999, s.load)).toBe("doc")
    expect(s.calls()).toBe(1)
  })

  it("a failure is not cached: the next call loads again, and a concurrent caller shares the failure", async () => {
    const cache = makeRefreshingCache<string>(POLICY)
    const s = source()
    s.answer(async () => {
      throw new Error("down")
    })
    const [a, b] = await Promise.allSettled([cache.get("k", 0, s.load), cache.get("k", 0, s.load)])
    expect([a.status, b.status]).toEqual(["rejected", "rejected"])
    expect(s.calls()).toBe(1)
    await expect(cache.get("k", 1, s.load)).rejects.toThrow("down")
    expect(s.calls()).toBe(2)
    s.answer(async () => ({ value: "up" }))
    expect(await cache.get("k", 2, s.load)).toBe("up")
  })

  it("after expiry a failed refresh serves the last good value and is retried only after the pause", async () => {
    const cache = makeRefreshingCache<string>(POLICY)
    const s = source()
    s.answer(async () => ({ value: "good" }))
    await cache.get("k", 0, s.load)
    s.answer(async () => {
      throw new Error("down")
    })
    expect(await cache.get("k", 3600_000, s.load)).toBe("good")
    expect(s.calls()).toBe(2)
    expect(await cache.get("k", 3659_999, s.load)).toBe("good")
    expect(s.calls()).toBe(2)
    s.answer(async () => ({ value: "newer" }))
    expect(await cache.get("k", 3660_000, s.load)).toBe("newer")
    expect(s.calls()).toBe(3)
  })

  it("the source's max-age counts within bounds: at least 5 minutes, at most 24 hours", async () => {
    const cache = makeRefreshingCache<string>(POLICY)
    const cases: ReadonlyArray<readonly [string, number | undefined, number]> = [
      ["short", 10_000, 300_000],
      ["zero", 0, 300_000],
      ["in bounds", 7200_000, 7200_000],
      ["long", 30 * 86_400_000, 86_400_000],
      ["none", undefined, 3600_000],
    ]
    for (const [key, maxAgeMs, lifetime] of cases) {
      const s = source()
      s.answer(async () => (maxAgeMs === undefined ? { value: key } : { value: key, maxAgeMs }))
      await cache.get(key, 0, s.load)
      await cache.get(key, lifetime - 1, s.load)
      expect(s.calls(), key).toBe(1)
      await cache.get(key, lifetime, s.load)
      expect(s.calls(), key).toBe(2)
    }
  })

  it("keeps at most maxEntries keys, dropping the oldest written", async () => {
    const cache = makeRefreshingCache<string>(POLICY)
    const s = source()
    for (const key of ["a", "b", "c", "d"]) await cache.get(key, 0, s.load)
    expect(s.calls()).toBe(4)
    for (const key of ["b", "c", "d"]) await cache.get(key, 1, s.load)
    expect(s.calls()).toBe(4)
    await cache.get("a", 1, s.load)
    expect(s.calls()).toBe(5)
  })

  it("reads max-age from Cache-Control; no-store and no-cache count as 0", () => {
    expect(maxAgeOf(null)).toBeUndefined()
    expect(maxAgeOf("public, max-age=3600")).toBe(3600_000)
    expect(maxAgeOf('Public, Max-Age="120", must-revalidate')).toBe(120_000)
    expect(maxAgeOf("private")).toBeUndefined()
    expect(maxAgeOf("no-store")).toBe(0)
    expect(maxAgeOf("max-age=600, no-cache")).toBe(0)
    expect(maxAgeOf("max-age=abc")).toBeUndefined()
  })
})
