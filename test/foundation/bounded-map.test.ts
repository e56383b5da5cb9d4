import { describe, expect, it } from "vitest"
import { BoundedMap } from "../../src/platform/bounded-map.js"

// BoundedMap keeps one iterator across calls to find its oldest entry (a fresh iterator walks
// every deleted entry in front of it: O(capacity) per store). These tests hold it to the plain
// Map queue it replaced, operation for operation, including deletes and stores of keys the kept
// iterator has already passed or not yet reached.

/** The replaced implementation: the first key of a fresh iterator is the oldest. */
class NaiveBounded<K, V> extends Map<K, V> {
  constructor(readonly capacity: number) {
    super()
  }
  store(key: K, value: V) {
    this.delete(key)
    if (this.size >= this.capacity) this.delete(this.oldestKey()!)
    this.set(key, value)
  }
  oldestKey(): K | undefined {
    return this.keys().next().value
  }
}

/** A deterministic sequence (xorshift32): the test is the same on every run. */
const sequence = (seed: number) => {
  let x = seed
  return (n: number) => {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    return (x >>> 0) % n
  }
}

describe("BoundedMap", () => {
  it("drops the least recently stored entry beyond its capacity", () => {
    const map = new BoundedMap<string, number>(3)
    map.store("a", 1)
    map.store("b", 2)
    map.store("c", 3)
    map.store("a", 4) // stored again: now the most recent
    map.store("d", 5)
    expect([...map.entries()]).toEqual([
      ["c", 3],
      ["a", 4],
      ["d", 5],
    ])
    expect(map.oldestKey()).toBe("c")
  })

  it("finds the oldest after it is deleted, stored again, or the map cleared", () => {
    const map = new BoundedMap<string, number>(10)
    for (const k of ["a", "b", "c"]) map.store(k, 0)
    expect(map.oldestKey()).toBe("a")
    map.delete("a")
    expect(map.oldestKey()).toBe("b")
    map.store("b", 1) // the oldest, stored again: it moves to the end
    expect(map.oldestKey()).toBe("c")
    map.delete("c")
    expect(map.oldestKey()).toBe("b")
    map.delete("b")
    expect(map.oldestKey()).toBeUndefined()
    map.store("x", 1)
    expect(map.oldestKey()).toBe("x")
    map.clear()
    expect(map.oldestKey()).toBeUndefined()
    map.store("y", 1)
    map.store("z", 1)
    expect(map.oldestKey()).toBe("y")
  })

  it("keeps the same entries in the same order as the plain Map queue under mixed operations", () => {
    for (const capacity of [1, 7, 100, 1_000]) {
      const next = sequence(capacity + 1)
      const fast = new BoundedMap<number, number>(capacity)
      const naive = new NaiveBounded<number, number>(capacity)
      for (let i = 0; i < 20_000; i++) {
        const key = next(capacity * 3)
        const op = next(100)
        if (op < 70) {
          fast.store(key, i)
          naive.store(key, i)
        } else if (op < 90) {
          expect(fast.delete(key)).toBe(naive.delete(key))
        } else if (op < 99) {
          const oldest = naive.oldestKey()
          expect(fast.oldestKey()).toBe(oldest)
          if (oldest !== undefined && op % 2 === 0) {
            fast.delete(oldest)
            naive.delete(oldest)
          }
        } else {
          fast.clear()
          naive.clear()
        }
        expect(fast.size).toBeLessThanOrEqual(capacity)
      }
      expect([...fast.entries()]).toEqual([...naive.entries()])
    }
  })
})
