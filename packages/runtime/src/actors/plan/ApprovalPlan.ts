/**
 * Answers to a provider's approval requests: the one already recorded, and the item's
 * new state.
 */
import type { TurnItem } from "@skein/domain"

/** The decision already recorded for an approval that is no longer open, if any (pure). */
export const approvalAnswer = (
  requests: ReadonlyArray<TurnItem>,
  approvalId: string
): "accept" | "decline" | "cancel" | undefined => {
  let answer: "accept" | "decline" | "cancel" | undefined
  for (const it of requests) {
    if (it.type !== "approval_request" || it.approvalId !== approvalId) continue
    if (it.status === "open") return undefined
    answer = it.status
  }
  return answer
}

/**
 * Approve, decline or cancel an open approval request: the item's new state. `requests`
 * are the thread's approval requests with that id, the newest run's first (see
 * `EventStore.lookup.approvalRequests`).
 */
export const planApproval = (
  requests: ReadonlyArray<TurnItem>,
  approvalId: string,
  decision: "accept" | "decline" | "cancel"
): TurnItem | undefined => {
  for (const it of requests) {
    if (it.type === "approval_request" && it.approvalId === approvalId && it.status === "open") {
      return { ...it, status: decision }
    }
  }
  return undefined
}
