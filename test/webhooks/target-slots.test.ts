import { describe, expect, it } from "vitest"
import { makeTargetSlots, targetOf } from "../../src/webhooks/delivery/target-slots.js"

// Per-receiver send slots: at most `limit` in flight per origin; a send waits briefly for a
// slot (a fast receiver frees one at once) and gives up when the receiver stays busy.

describe("per-receiver send slots", () => {
  it("counts per origin, never beyond the limit", () => {
    const slots = makeTargetSlots(2)
    const a = targetOf("https://a.example/hook?x=1")
    expect(a).toBe(targetOf("https://a.example/other"))
    expect([slots.tryAcquire(a), slots.tryAcquire(a), slots.tryAcquire(a)]).toEqual([true, true, false])
    expect(slots.tryAcquire(targetOf("https://b.example/hook"))).toBe(true)
    slots.release(a)
    expect(slots.inFlight(a)).toBe(1)
  })

  it("a waiting send takes over a slot as soon as one is released", async () => {
    const slots = makeTargetSlots(1)
    expect(slots.tryAcquire("o")).toBe(true)
    const waiting = slots.acquire("o", 5_000)
    slots.release("o")
    expect(await waiting).toBe(true)
    expect(slots.inFlight("o")).toBe(1)
  })

  it("a send that waits longer than its bound gets no slot (the attempt is deferred), and leaves none taken", async () => {
    const slots = makeTargetSlots(1)
    expect(slots.tryAcquire("o")).toBe(true)
    expect(await slots.acquire("o", 20)).toBe(false)
    slots.release("o")
    expect(slots.inFlight("o")).toBe(0)
    expect(await slots.acquire("o", 20)).toBe(true)
  })
})
