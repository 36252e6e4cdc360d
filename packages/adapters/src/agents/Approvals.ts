/**
 * Approval requests of an agent: the instance's policy answers them, or they wait,
 * each under an approval id, for a client's decision on the thread that asked.
 */
import type { ApprovalDecision, ApprovalId } from "@skein/domain"
import { makeId } from "@skein/domain"
import type { ApprovalPolicy } from "./AgentCommon.js"
import { automaticDecision } from "./AgentCommon.js"

/**
 * What becomes of a request: `open` when a person must answer and a turn is there to
 * show it; else the decision taken at once (the policy's, or `decline` when nobody is
 * there to ask).
 */
export const routeApproval = (policy: ApprovalPolicy, turnRunning: boolean): ApprovalDecision | "open" =>
  automaticDecision(policy) ?? (turnRunning ? "open" : "decline")

/** The requests that wait for a client, with what the driver needs to answer each (`A`). */
export interface WaitingApprovals<A> {
  /** Records a waiting request of `thread`; its new approval id. */
  readonly open: (thread: string, answer: A) => ApprovalId
  /** Takes the request `approvalId` of `thread` out; undefined when `thread` has none such. */
  readonly take: (thread: string, approvalId: string) => A | undefined
  /** Forgets the requests of `thread` (its turn ended: the agent takes no decision now). */
  readonly dropThread: (thread: string) => void
  readonly clear: () => void
  readonly size: () => number
}

export const makeWaitingApprovals = <A>(): WaitingApprovals<A> => {
  const waiting = new Map<string, { readonly thread: string; readonly answer: A }>()
  return {
    open: (thread, answer) => {
      const approvalId = makeId.approval()
      waiting.set(approvalId, { thread, answer })
      return approvalId
    },
    take: (thread, approvalId) => {
      const entry = waiting.get(approvalId)
      if (entry === undefined || entry.thread !== thread) return undefined
      waiting.delete(approvalId)
      return entry.answer
    },
    dropThread: (thread) => {
      for (const [approvalId, entry] of waiting) if (entry.thread === thread) waiting.delete(approvalId)
    },
    clear: () => waiting.clear(),
    size: () => waiting.size
  }
}
