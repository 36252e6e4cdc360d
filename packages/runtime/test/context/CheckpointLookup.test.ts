import { describe, expect, it } from "@effect/vitest"
import { latestReadyCheckpoint } from "../../src/context/index.js"
import { putRun } from "../../src/store/Projection.js"
import { addCheckpoint, addRun, newState } from "./builder.js"

describe("latestReadyCheckpoint", () => {
  it("follows the checkpoints Map as it grows and reads statuses fresh", () => {
    const s = newState()
    const runs = Array.from({ length: 6 }, (_, i) => addRun(s, { provider: "alpha", message: `${i + 1}` }))
    expect(latestReadyCheckpoint(s, 1, 6)).toBeUndefined()
    addCheckpoint(s, runs[0]!, ["a"])
    addCheckpoint(s, runs[2]!, ["b"])
    expect(latestReadyCheckpoint(s, 1, 6)?.runOrdinal).toBe(3)
    expect(latestReadyCheckpoint(s, 1, 2)?.runOrdinal).toBe(1)
    expect(latestReadyCheckpoint(s, 4, 6)).toBeUndefined()
    const five = addCheckpoint(s, runs[4]!, ["c"])
    s.checkpoints.set(five.id, { ...five, status: "pending" })
    expect(latestReadyCheckpoint(s, 1, 6)?.runOrdinal).toBe(3)
    s.checkpoints.set(five.id, { ...five, status: "ready" })
    expect(latestReadyCheckpoint(s, 1, 6)?.runOrdinal).toBe(5)
    // Out-of-order insertion, and a rolled-back run's checkpoint is not current.
    addCheckpoint(s, runs[3]!, ["d"])
    putRun(s, { ...s.runs.get(5)!, status: "rolled_back" })
    expect(latestReadyCheckpoint(s, 1, 6)?.runOrdinal).toBe(4)
    // A deletion (never done by the runtime) rebuilds the index.
    s.checkpoints.delete(five.id)
    s.checkpoints.delete([...s.checkpoints.keys()][0]!)
    expect(latestReadyCheckpoint(s, 1, 2)).toBeUndefined()
    expect(latestReadyCheckpoint(s, 1, 6)?.runOrdinal).toBe(4)
  })
})
