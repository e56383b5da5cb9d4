import { Deferred, Effect, Exit, Fiber } from "effect"
import { describe, expect, it } from "vitest"
import { makeTargetSlots, targetOf } from "../../src/webhooks/delivery/target-slots.js"

// Per-receiver send slots: at most `limit` in flight per origin, released on every path; a
// send to a busy receiver is refused at once (deferred by the caller) unless the receiver is
// answering promptly, and a send interrupted while it waits never takes a slot with it.

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)

/** Starts a send that holds a slot of `origin` until `done` is completed; resolves once it holds it. */
const holdSlot = (slots: ReturnType<typeof makeTargetSlots>, origin: string) =>
  Effect.gen(function* () {
    const holding = yield* Deferred.make<void>()
    const done = yield* Deferred.make<void>()
    const fiber = yield* Effect.forkDetach(
      slots.withSlot(
        origin,
        Effect.andThen(Deferred.succeed(holding, undefined), Deferred.await(done)).pipe(Effect.as("sent" as const)),
        Effect.andThen(Deferred.succeed(holding, undefined), Effect.succeed("busy" as const)),
      ),
    )
    yield* Deferred.await(holding)
    return { fiber, finish: Deferred.succeed(done, undefined) }
  })

const sleep = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

describe("per-receiver send slots", () => {
  it("counts per origin, never beyond the limit; a full receiver's send is refused (the attempt is deferred)", () =>
    run(
      Effect.gen(function* () {
        const slots = makeTargetSlots(2, { promptMs: 0 })
        const a = targetOf("https://a.example/hook?x=1")
        expect(a).toBe(targetOf("https://a.example/other"))
        const first = yield* holdSlot(slots, a)
        const second = yield* holdSlot(slots, a)
        expect(slots.inFlight(a)).toBe(2)
        expect(yield* slots.withSlot(a, Effect.succeed("sent"), Effect.succeed("busy"))).toBe("busy")
        expect(
          yield* slots.withSlot(targetOf("https://b.example/hook"), Effect.succeed("sent"), Effect.succeed("busy")),
        ).toBe("sent")
        yield* first.finish
        expect(yield* Fiber.join(first.fiber)).toBe("sent")
        expect(slots.inFlight(a)).toBe(1)
        yield* second.finish
        yield* Fiber.join(second.fiber)
        expect(slots.inFlight(a)).toBe(0)
      }),
    ))

  it("the slot is released on every exit of the send: a failure between acquiring and sending, a defect, an interruption", () =>
    run(
      Effect.gen(function* () {
        const slots = makeTargetSlots(1, { promptMs: 0 })
        // As a secret that cannot be opened: the send fails after the slot was taken.
        const failed = yield* Effect.exit(
          slots.withSlot("o", Effect.fail("cannot open the secret"), Effect.succeed("busy")),
        )
        expect(Exit.isFailure(failed)).toBe(true)
        expect(slots.inFlight("o")).toBe(0)
        const died = yield* Effect.exit(slots.withSlot("o", Effect.die(new Error("boom")), Effect.succeed("busy")))
        expect(Exit.isFailure(died)).toBe(true)
        expect(slots.inFlight("o")).toBe(0)
        const held = yield* holdSlot(slots, "o")
        expect(slots.inFlight("o")).toBe(1)
        yield* Fiber.interrupt(held.fiber)
        expect(slots.inFlight("o")).toBe(0)
        expect(yield* slots.withSlot("o", Effect.succeed("sent"), Effect.succeed("busy"))).toBe("sent")
      }),
    ))

  it("a send to a receiver that answers promptly waits for a slot and takes it over as soon as one is released", () =>
    run(
      Effect.gen(function* () {
        const slots = makeTargetSlots(1, { promptMs: 5_000 })
        const held = yield* holdSlot(slots, "o")
        const waiter = yield* Effect.forkDetach(
          slots.withSlot(
            "o",
            Effect.sync(() => slots.inFlight("o")).pipe(Effect.map((n) => `sent with ${n} in flight`)),
            Effect.succeed("busy"),
          ),
        )
        yield* sleep(20)
        expect(slots.waiting("o")).toBe(1)
        yield* held.finish
        expect(yield* Fiber.join(waiter)).toBe("sent with 1 in flight")
        expect(slots.inFlight("o")).toBe(0)
        expect(slots.waiting("o")).toBe(0)
      }),
    ))

  it("a send that waits longer than the prompt bound gets no slot (the attempt is deferred), and leaves none taken", () =>
    run(
      Effect.gen(function* () {
        const slots = makeTargetSlots(1, { promptMs: 30 })
        const held = yield* holdSlot(slots, "o")
        expect(yield* slots.withSlot("o", Effect.succeed("sent"), Effect.succeed("busy"))).toBe("busy")
        expect(slots.waiting("o")).toBe(0)
        yield* held.finish
        yield* Fiber.join(held.fiber)
        expect(slots.inFlight("o")).toBe(0)
        expect(yield* slots.withSlot("o", Effect.succeed("sent"), Effect.succeed("busy"))).toBe("sent")
      }),
    ))

  it("a receiver whose sends are older than the prompt bound (slow or hanging) is refused at once, without waiting", () =>
    run(
      Effect.gen(function* () {
        const slots = makeTargetSlots(1, { promptMs: 30 })
        const held = yield* holdSlot(slots, "o")
        yield* sleep(60)
        const started = performance.now()
        expect(yield* slots.withSlot("o", Effect.succeed("sent"), Effect.succeed("busy"))).toBe("busy")
        expect(performance.now() - started).toBeLessThan(15)
        expect(slots.waiting("o")).toBe(0)
        yield* held.finish
        yield* Fiber.join(held.fiber)
      }),
    ))

  it("a send interrupted while it waits leaves the queue and is never handed a slot: the next release frees it for good", () =>
    run(
      Effect.gen(function* () {
        // The reviewer's reproduction: with the old promise-based wait the abandoned waiter was
        // handed the released slot and nobody ever gave it back.
        const slots = makeTargetSlots(1, { promptMs: 5_000 })
        const held = yield* holdSlot(slots, "o")
        let sentByTheInterrupted = false
        const waiter = yield* Effect.forkDetach(
          slots.withSlot(
            "o",
            Effect.sync(() => {
              sentByTheInterrupted = true
            }),
            Effect.void,
          ),
        )
        yield* sleep(20)
        expect(slots.waiting("o")).toBe(1)
        // E.g. a sibling send's database write failed and the batch interrupts the others.
        yield* Fiber.interrupt(waiter)
        expect(slots.waiting("o")).toBe(0)
        yield* held.finish
        yield* Fiber.join(held.fiber)
        expect(slots.inFlight("o")).toBe(0)
        expect(sentByTheInterrupted).toBe(false)
        expect(yield* slots.withSlot("o", Effect.succeed("sent"), Effect.succeed("busy"))).toBe("sent")
      }),
    ))

  it("a slot handed to a waiter at the moment it is interrupted is passed on, not lost", () =>
    run(
      Effect.gen(function* () {
        const slots = makeTargetSlots(1, { promptMs: 5_000 })
        const held = yield* holdSlot(slots, "o")
        const waiter = yield* Effect.forkDetach(slots.withSlot("o", Effect.never, Effect.void))
        yield* sleep(20)
        // Release and interrupt in the same tick: the grant reaches a fiber that is being interrupted.
        yield* Effect.all([held.finish, Fiber.interrupt(waiter)], { concurrency: "unbounded" })
        yield* Fiber.join(held.fiber)
        yield* sleep(10)
        expect(slots.inFlight("o")).toBe(0)
        expect(slots.waiting("o")).toBe(0)
      }),
    ))
})
