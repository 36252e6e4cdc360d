/** Which transfers a thread's next run takes in, and in what order. */
import { describe, expect, it } from "@effect/vitest"
import type { ContextTransfer } from "@skein/domain"
import { ContextTransferId, ThreadId } from "@skein/domain"
import { pendingIncoming } from "../../src/lineage/LineageContext.js"
import { newState, THREAD } from "../context/builder.js"

const mergeBack = (id: string, from: string, createdAt: string): ContextTransfer => ({
  id: ContextTransferId.make(id),
  type: "merge_back",
  sourceThreadId: ThreadId.make(from),
  targetThreadId: THREAD,
  sourcePoint: { threadId: ThreadId.make(from), runOrdinal: 1 },
  basePoint: null,
  sourceProvider: null,
  targetProvider: null,
  status: "pending",
  resolution: null,
  reasons: [],
  createdBy: "user",
  createdAt,
  consumedAt: null,
  consumedByRunId: null
})

describe("pendingIncoming", () => {
  it("oldest first; two made in one millisecond keep the order the log recorded them in, whatever their ids", () => {
    const s = newState()
    const first = mergeBack("xfr_zzz", "thr_fork_1", "2026-01-01T00:00:00.005Z")
    const second = mergeBack("xfr_aaa", "thr_fork_2", "2026-01-01T00:00:00.005Z")
    const earlier = mergeBack("xfr_mmm", "thr_fork_0", "2026-01-01T00:00:00.001Z")
    for (const transfer of [first, second, earlier]) s.transfers.set(transfer.id, transfer)
    expect(pendingIncoming(s).map((t) => t.id)).toEqual([earlier.id, first.id, second.id])
  })
})
