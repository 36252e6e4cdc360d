/**
 * Two small truths the CLI shows: a thread's `updatedAt` moves with its runs, and a
 * second answer to an approval learns the decision already recorded (pure parts; the
 * CLI suite checks both end to end through the daemon).
 */
import type { AppThread, TurnItem } from "@skein/domain"
import { describe, expect, it } from "vitest"
import { approvalAnswer } from "../../packages/runtime/src/actors/ThreadPlanner.js"
import { withActivity } from "../../packages/runtime/src/store/ThreadActivity.js"

const thread = { id: "thr_1", updatedAt: "2026-01-01T00:00:00.000Z" } as unknown as AppThread

describe("a thread's activity", () => {
  it("updatedAt is the latest of the thread's own and its last run's timestamps", () => {
    expect(
      withActivity(thread, ["2026-01-01T00:00:01.000Z", "2026-01-01T00:00:02.000Z", null, undefined]).updatedAt
    ).toBe("2026-01-01T00:00:02.000Z")
    expect(withActivity(thread, [])).toBe(thread)
    expect(withActivity(thread, ["2025-12-31T00:00:00.000Z"])).toBe(thread)
  })
})

describe("an approval's answer", () => {
  const request = (status: string) =>
    ({ type: "approval_request", approvalId: "apr_1", question: "q", status }) as unknown as TurnItem
  it("is the recorded decision once the request is no longer open", () => {
    expect(approvalAnswer([request("accept")], "apr_1")).toBe("accept")
    expect(approvalAnswer([request("open")], "apr_1")).toBeUndefined()
    expect(approvalAnswer([request("decline")], "apr_2")).toBeUndefined()
    expect(approvalAnswer([], "apr_1")).toBeUndefined()
  })
})
