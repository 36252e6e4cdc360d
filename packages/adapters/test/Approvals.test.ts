import { describe, expect, it } from "vitest"
import { makeWaitingApprovals, routeApproval } from "../src/agents/Approvals.js"

describe("Approvals", () => {
  it("routes a request by policy, declining when no turn is there to ask", () => {
    expect([
      routeApproval("ask", true),
      routeApproval("ask", false),
      routeApproval("accept", true),
      routeApproval("accept", false),
      routeApproval("decline", true)
    ]).toEqual(["open", "decline", "accept", "accept", "decline"])
  })

  it("hands a waiting request back once, and only to the thread that asked", () => {
    const waiting = makeWaitingApprovals<number>()
    const a = waiting.open("t1", 10)
    const b = waiting.open("t2", 20)
    expect(a).not.toBe(b)
    expect(waiting.take("t2", a)).toBeUndefined()
    expect(waiting.take("t1", a)).toBe(10)
    expect(waiting.take("t1", a)).toBeUndefined()
    expect(waiting.size()).toBe(1)
    waiting.open("t2", 21)
    waiting.open("t3", 30)
    waiting.dropThread("t2")
    expect(waiting.take("t2", b)).toBeUndefined()
    expect(waiting.size()).toBe(1)
    waiting.clear()
    expect(waiting.size()).toBe(0)
  })
})
