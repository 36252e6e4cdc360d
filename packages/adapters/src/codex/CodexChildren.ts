/**
 * Codex's own agents, followed to their own end. A collab call that completes (a spawn,
 * a send, even a wait that timed out) says what the agent was doing then, not that it
 * finished: each agent a turn's collab calls name is followed by its own thread, whose
 * notifications come on the same connection. When the agent's turn ends, its node of
 * the run is updated (completed or failed, with its last message). A turn whose own end
 * comes while some of its agents still run is held open until they have ended (or the
 * turn is interrupted): its agents work in the same workspace, and the run's end (and
 * its checkpoint) must come after their work.
 */
import type { TurnItemContent } from "@skein/domain"
import { clip } from "../agents/AgentCommon.js"

const RESULT_CAP = 16_000

/** What a turn knows of the agents its collab calls named, by the agent's thread. */
export interface TurnChildren {
  /** Agent thread → its task and whether it is running. */
  readonly agents: Map<string, { readonly description: string; running: boolean }>
}

/** A Codex state of an agent as running or not (CodexItems' mapping: anything but an end is running). */
const isEnded = (status: unknown) =>
  status === "completed" ||
  status === "errored" ||
  status === "shutdown" ||
  status === "notFound" ||
  status === "interrupted"

/** The last agent message of a turn as Codex reported it (`turn.items`), if any. */
const lastMessage = (turn: unknown): string | undefined => {
  const items = (turn as { readonly items?: unknown } | undefined)?.items
  if (!Array.isArray(items)) return undefined
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i] as { readonly type?: unknown; readonly text?: unknown }
    if (item?.type === "agentMessage" && typeof item.text === "string") return item.text
  }
  return undefined
}

/** How many ends of threads nobody follows are kept, in case a collab call names one later. */
const EARLY_CAP = 256

export const makeChildWatch = <T extends TurnChildren>() => {
  /** Agent thread → the turn that follows it. */
  const owners = new Map<string, T>()
  /** Thread → its turn's end (`turn/completed` params), seen before any turn followed it. */
  const early = new Map<string, unknown>()

  /** The node of agent `threadId` of `owner` whose turn ended as `params` says; marks it not running. */
  const endOf = (owner: T, threadId: string, params: unknown): TurnItemContent | undefined => {
    const agent = owner.agents.get(threadId)
    if (agent === undefined) return undefined
    const turn = (params as { readonly turn?: { readonly status?: unknown } } | undefined)?.turn
    const status = turn?.status
    if (status === "inProgress") return undefined
    agent.running = false
    return {
      type: "child_agent",
      childRef: threadId,
      description: agent.description,
      status: status === "completed" ? "completed" : "failed",
      nativeThreadRef: threadId,
      result: clip(lastMessage(turn) ?? (typeof status === "string" ? status : "ended"), RESULT_CAP)
    }
  }

  return {
    /**
     * A report of `turn`, not yet decoded: when it is a collab call, the agents it names
     * are followed, running or not as it says. Answers the nodes of those whose turn had
     * already ended (its end came before this report).
     */
    noteReport: (turn: T, rawItem: unknown): ReadonlyArray<TurnItemContent> => {
      const item = rawItem as {
        readonly type?: unknown
        readonly receiverThreadIds?: unknown
        readonly prompt?: unknown
        readonly agentsStates?: Record<string, { readonly status?: unknown }> | null
      }
      if (item?.type !== "collabAgentToolCall" || !Array.isArray(item.receiverThreadIds)) return []
      const ended: Array<TurnItemContent> = []
      for (const threadId of item.receiverThreadIds) {
        if (typeof threadId !== "string") continue
        const known = turn.agents.get(threadId)
        const description =
          typeof item.prompt === "string" ? clip(item.prompt, 200) : (known?.description ?? "a Codex agent")
        turn.agents.set(threadId, { description, running: !isEnded(item.agentsStates?.[threadId]?.status) })
        owners.set(threadId, turn)
        const before = early.get(threadId)
        if (before === undefined) continue
        early.delete(threadId)
        const node = endOf(turn, threadId, before)
        if (node !== undefined) ended.push(node)
      }
      return ended
    },

    /**
     * A turn of thread `threadId` ended (`turn/completed`'s params, not decoded): when it is
     * a followed agent's, the node its owner's run gets, and the owner. Undefined otherwise.
     */
    agentTurnEnded: (
      threadId: string,
      params: unknown
    ): { readonly owner: T; readonly item: TurnItemContent } | undefined => {
      const owner = owners.get(threadId)
      if (owner === undefined) {
        early.delete(threadId)
        early.set(threadId, params)
        if (early.size > EARLY_CAP) early.delete(early.keys().next().value!)
        return undefined
      }
      const item = endOf(owner, threadId, params)
      return item === undefined ? undefined : { owner, item }
    },

    /** Whether any agent `turn` follows is still running. */
    running: (turn: T): boolean => {
      for (const agent of turn.agents.values()) if (agent.running) return true
      return false
    },

    /** The turn has ended for good: its agents are no longer followed. */
    forget: (turn: T): void => {
      for (const [threadId, owner] of owners) if (owner === turn) owners.delete(threadId)
    }
  }
}
