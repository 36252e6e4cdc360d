/**
 * The thread operations of a Claude driver session: a new session, a resume, a fork
 * (at a turn), a rollback, each a launch plan (ClaudeLaunches) for the session's next
 * process. A start, a fork and a resume open that process at once, so that a refusal
 * (a session in use, a conversation not found) is the operation's failure.
 */
import * as Crypto from "node:crypto"
import type { NativeThreadHandle, ProviderSessionHandle } from "@skein/domain"
import { Effect } from "effect"
import type { Failure } from "../agents/AgentOptions.js"
import type { Shared } from "./ClaudeEvents.js"
import type { ClaudePool } from "./ClaudePool.js"
import { lastMessageOf, messageBefore } from "./ClaudeTranscript.js"

export interface ClaudeThreadsContext {
  readonly shared: Shared
  readonly failure: Failure
  readonly pool: ClaudePool
  /** The transcript of a session on disk, if Claude Code wrote one. */
  readonly transcript: (sessionId: string) => string | null
}

const strong = (nativeRef: string): NativeThreadHandle => ({ nativeRef, strength: "strong" })

export const claudeThreads = (
  context: ClaudeThreadsContext
): Pick<ProviderSessionHandle, "startThread" | "resumeThread" | "forkThread" | "rollbackThread"> => {
  const { shared, failure, pool, transcript } = context

  /** Opens a session planned just now; a session that did not open is not planned any more. */
  const openPlanned = (sessionId: string) =>
    pool.open(sessionId).pipe(Effect.tapError(() => Effect.sync(() => shared.launches.clear(sessionId))))

  /** The last message of turn `atTurnRef` of a session: this Skein's record, else the transcript. */
  const turnEnd = (sessionId: string, atTurnRef: string) =>
    Effect.suspend(() => {
      const file = transcript(sessionId)
      const last = shared.turnEnds.get(atTurnRef) ?? (file === null ? undefined : lastMessageOf(file, atTurnRef))
      return last === undefined
        ? Effect.fail(failure("error", `Claude session ${sessionId} has no turn ${atTurnRef}`, "turn_not_found"))
        : Effect.succeed(last)
    })

  /** The message turn `beforeTurnRef` followed (null: it was the first), or a failure. */
  const turnStart = (sessionId: string, beforeTurnRef: string) =>
    Effect.suspend(() => {
      let before = shared.turnStarts.get(beforeTurnRef)
      if (before === undefined) {
        const file = transcript(sessionId)
        before = file === null ? undefined : messageBefore(file, beforeTurnRef)
      }
      if (before === undefined) {
        return Effect.fail(
          failure("error", `Claude session ${sessionId} has no turn ${beforeTurnRef}`, "turn_not_found")
        )
      }
      if (before === null) {
        return Effect.fail(
          failure(
            "unsupported",
            `Claude Code cannot roll session ${sessionId} back to before its first turn; start a new thread instead`
          )
        )
      }
      return Effect.succeed(before)
    })

  return {
    startThread: Effect.fnUntraced(function* ({ model, tools }) {
      const sessionId = Crypto.randomUUID()
      if (model !== null) shared.models.set(sessionId, model)
      if (tools !== undefined) shared.tools.set(sessionId, tools)
      shared.launches.set(sessionId, { kind: "new" })
      yield* openPlanned(sessionId)
      return strong(sessionId)
    }),
    resumeThread: Effect.fnUntraced(function* (sessionId, options) {
      if (options?.tools !== undefined) shared.tools.set(sessionId, options.tools)
      yield* pool.open(sessionId)
    }),
    forkThread: Effect.fn("ClaudeSession.forkThread")(function* (sessionId, atTurnRef, options) {
      const at = atTurnRef === null ? null : yield* turnEnd(sessionId, atTurnRef)
      const forked = Crypto.randomUUID()
      const model = shared.models.get(sessionId)
      if (model !== undefined) shared.models.set(forked, model)
      if (options?.tools !== undefined) shared.tools.set(forked, options.tools)
      shared.launches.set(forked, { kind: "fork", from: sessionId, at })
      if (at !== null) shared.tips.set(forked, at)
      yield* openPlanned(forked)
      return strong(forked)
    }),
    rollbackThread: Effect.fn("ClaudeSession.rollbackThread")(function* (sessionId, beforeTurnRef) {
      const live = pool.live(sessionId)
      if (live?.turn) {
        return yield* failure("error", `Claude session ${sessionId} has a turn running; interrupt it first`)
      }
      const before = yield* turnStart(sessionId, beforeTurnRef)
      shared.launches.set(sessionId, { kind: "rewind", at: before })
      shared.tips.set(sessionId, before)
      // The next process of this session starts at that message.
      if (live !== undefined) yield* pool.stop(live)
    })
  }
}
