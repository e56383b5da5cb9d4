import { expect, it } from "vitest"
import { randomBytesPooled } from "../../src/platform/random-pool.js"

it("pooled CSPRNG draws: the size asked, each its own copy, never repeated across refills, large draws direct", () => {
  const seen = new Set<string>()
  // 20,000 draws of 20 bytes walk the 4 KiB pool about a hundred times
  for (let i = 0; i < 20_000; i++) {
    const bytes = randomBytesPooled(20)
    expect(bytes).toHaveLength(20)
    seen.add(bytes.toString("hex"))
  }
  expect(seen.size).toBe(20_000)

  const kept = randomBytesPooled(32)
  const copy = Buffer.from(kept)
  for (let i = 0; i < 300; i++) randomBytesPooled(16) // refills the pool under `kept`
  expect(kept.equals(copy)).toBe(true)
  kept.fill(0)
  expect(randomBytesPooled(32).equals(Buffer.alloc(32))).toBe(false)

  for (const size of [1, 12, 255, 256, 257, 4096, 10_000]) expect(randomBytesPooled(size)).toHaveLength(size)
  // odd sizes that do not divide the pool still never hand out a byte twice (no zero run from the wipe)
  const odd = Array.from({ length: 2_000 }, () => randomBytesPooled(7).toString("hex"))
  expect(new Set(odd).size).toBe(2_000)
  expect(odd.filter((h) => h === "00000000000000")).toHaveLength(0)
})
