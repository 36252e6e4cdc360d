import { describe, expect, it } from "vitest"
import { makeTurnSlots } from "../src/agents/TurnSlot.js"

describe("TurnSlots", () => {
  it("holds one turn per thread, freed only by its holder", () => {
    const slots = makeTurnSlots<{ readonly n: number }>()
    const first = { n: 1 }
    const second = { n: 2 }
    expect(slots.claim("t", first)).toBe(true)
    expect(slots.claim("t", second)).toBe(false)
    expect(slots.claim("u", second)).toBe(true)
    slots.release("t", second)
    expect(slots.current("t")).toBe(first)
    slots.release("t", first)
    expect(slots.current("t")).toBeUndefined()
    expect(slots.drain()).toEqual([["u", second]])
    expect(slots.current("u")).toBeUndefined()
  })
})
