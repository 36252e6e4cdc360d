import { describe, expect, it } from "@effect/vitest"
import type { AppThread, RunStatus, ThreadId } from "@skein/domain"
import fc from "fast-check"
import type { Autonomy } from "@skein/domain"
import { autonomyRefusal } from "@skein/domain"
import {
  childDepth,
  defaultSubagentLimits,
  isSubagentOf,
  spawnRefusal,
  type SubagentLimits
} from "../../src/mcp/SubagentPolicy.js"

const thread = (id: string, parent: string | null, relationship: "subagent" | "fork" | null, observeOnly = false) =>
  ({
    id: id as ThreadId,
    title: id,
    workspace: null,
    lineage: {
      parentThreadId: parent as ThreadId | null,
      relationshipToParent: relationship,
      rootThreadId: "root" as ThreadId,
      ...(observeOnly ? { observeOnly } : {})
    },
    createdAt: "",
    updatedAt: ""
  }) as AppThread

const statuses: ReadonlyArray<RunStatus | null> = [
  null,
  "queued",
  "running",
  "completed",
  "failed",
  "interrupted",
  "rolled_back"
]
const live = (s: RunStatus | null) => s === null || s === "queued" || s === "running"

describe("subagent policy", () => {
  it("a child's depth counts the subagent links above it, up to the first thread no subagent made", () => {
    expect(childDepth([thread("a", null, null)])).toBe(1)
    expect(childDepth([thread("c", "b", "subagent"), thread("b", "a", "subagent"), thread("a", null, null)])).toBe(3)
    // A fork of a subagent starts counting again: the fork itself was not spawned.
    expect(childDepth([thread("f", "b", "fork"), thread("b", "a", "subagent")])).toBe(1)
  })

  it("refuses exactly past the limits, saying which", () =>
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        fc.array(fc.constantFrom(...statuses), { maxLength: 12 }),
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 10 }),
        (depth, children, maxDepth, maxLiveChildren) => {
          const limits: SubagentLimits = { maxDepth, maxLiveChildren }
          const refusal = spawnRefusal({ depth, children }, limits)
          const liveCount = children.filter(live).length
          if (depth > maxDepth) expect(refusal?.limit).toBe("depth")
          else if (liveCount >= maxLiveChildren) expect(refusal?.limit).toBe("liveChildren")
          else expect(refusal).toBeUndefined()
          if (refusal !== undefined) expect(refusal.message.length).toBeGreaterThan(20)
        }
      )
    ))

  it("defaults to 3 levels and 8 live children", () => {
    expect(defaultSubagentLimits).toEqual({ maxDepth: 3, maxLiveChildren: 8 })
    expect(spawnRefusal({ depth: 3, children: Array(7).fill("running") }, defaultSubagentLimits)).toBeUndefined()
    expect(spawnRefusal({ depth: 3, children: Array(8).fill("running") }, defaultSubagentLimits)?.message).toContain(
      "already has 8 subagents running"
    )
  })

  it("a thread's own subagents exclude forks, other parents' children and observe-only mirrors", () => {
    expect(isSubagentOf(thread("c", "p", "subagent"), "p")).toBe(true)
    expect(isSubagentOf(thread("c", "q", "subagent"), "p")).toBe(false)
    expect(isSubagentOf(thread("c", "p", "fork"), "p")).toBe(false)
    expect(isSubagentOf(thread("c", "p", "subagent", true), "p")).toBe(false)
  })

  it("a child may not act more freely than its parent, in approvals or in sandbox", () => {
    const approvals: ReadonlyArray<Autonomy["approvals"]> = ["decline", "ask", "accept"]
    const sandboxes: ReadonlyArray<Autonomy["sandbox"]> = ["read-only", "workspace", "full"]
    const autonomy = fc.record({ approvals: fc.constantFrom(...approvals), sandbox: fc.constantFrom(...sandboxes) })
    fc.assert(
      fc.property(autonomy, autonomy, (p, c) => {
        const refused = autonomyRefusal({ provider: "p", autonomy: p }, { provider: "c", autonomy: c })
        const freer =
          approvals.indexOf(c.approvals) > approvals.indexOf(p.approvals) ||
          sandboxes.indexOf(c.sandbox) > sandboxes.indexOf(p.sandbox)
        expect(refused !== undefined).toBe(freer)
        if (refused !== undefined) {
          expect(refused.message).toContain(`approvals ${c.approvals}, sandbox ${c.sandbox}`)
          expect(refused.message).toContain("list_providers")
        }
      })
    )
    // The same or less is always allowed; a full sandbox under a workspace one never.
    const ask: Autonomy = { approvals: "ask", sandbox: "workspace" }
    expect(autonomyRefusal({ provider: "p", autonomy: ask }, { provider: "c", autonomy: ask })).toBeUndefined()
    expect(
      autonomyRefusal({ provider: "p", autonomy: ask }, { provider: "c", autonomy: { ...ask, sandbox: "full" } })?._tag
    ).toBe("SubagentMoreAutonomous")
  })
})
