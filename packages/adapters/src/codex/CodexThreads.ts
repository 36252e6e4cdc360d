/**
 * The thread operations of a Codex driver session: start, resume, fork and roll back,
 * as requests to the app-server (a rollback looks the turn up with `thread/turns/list`).
 */
import type { NativeThreadHandle, NativeThreadOptions, ProviderFailure, ProviderSessionHandle } from "@skein/domain"
import { Effect } from "effect"
import type { Failure } from "../agents/AgentOptions.js"
import type { ClientMethod, Results, ThreadSettings } from "./CodexProtocol.js"
import { toolsConfig } from "./CodexProtocol.js"

const TURNS_PAGE = 100
const MAX_TURN_PAGES = 1000

/** A request to Codex with its result decoded (CodexSession's `call`). */
export type Call = <M extends ClientMethod>(
  method: M,
  params: unknown,
  onResult?: (result: unknown) => void
) => Effect.Effect<(typeof Results)[M]["Type"], ProviderFailure>

/** The thread operations of the port: start, resume, fork and roll back, as Codex requests. */
export const codexThreads = (
  call: Call,
  settings: ThreadSettings,
  defaultModel: string | null,
  failure: Failure
): Pick<ProviderSessionHandle, "startThread" | "resumeThread" | "forkThread" | "rollbackThread"> => {
  const strong = (nativeRef: string): NativeThreadHandle => ({ nativeRef, strength: "strong" })
  /** The settings with Skein's tools as the thread's MCP server, when given. */
  const withTools = (base: ThreadSettings, options?: NativeThreadOptions): ThreadSettings =>
    options?.tools === undefined ? base : { ...base, config: { ...base.config, ...toolsConfig(options.tools) } }

  const withModel = (model: string | null, options?: NativeThreadOptions) => {
    const chosen = model ?? defaultModel
    return withTools(chosen === null ? settings : { ...settings, model: chosen }, options)
  }

  /** Every turn of a thread, oldest first, page by page. */
  const listTurns = (threadId: string) =>
    Effect.gen(function* () {
      const all: Array<{ readonly id: string; readonly status: string }> = []
      let cursor: string | null = null
      for (let page = 0; page < MAX_TURN_PAGES; page++) {
        const result: (typeof Results)["thread/turns/list"]["Type"] = yield* call("thread/turns/list", {
          threadId,
          sortDirection: "asc",
          limit: TURNS_PAGE,
          ...(cursor === null ? {} : { cursor })
        })
        all.push(...result.data)
        cursor = result.nextCursor
        if (cursor === null || result.data.length === 0) break
      }
      return all
    })

  const turnNotFound = (error: ProviderFailure, threadId: string, turnRef: string) =>
    /turn not found/i.test(error.detail)
      ? failure("error", `Codex thread ${threadId} has no turn ${turnRef}`, "turn_not_found")
      : error

  const resume = (threadId: string, options?: NativeThreadOptions) =>
    call("thread/resume", { threadId, excludeTurns: true, ...withTools(settings, options) }).pipe(
      Effect.asVoid,
      Effect.mapError((error) =>
        error.kind === "crash"
          ? error
          : failure(
              "resume_failed",
              `Codex cannot resume thread ${threadId}: ${error.detail}`,
              /no rollout found|invalid session id/i.test(error.detail) ? "conversation_not_found" : undefined
            )
      )
    )

  return {
    startThread: Effect.fnUntraced(function* ({ model, tools }) {
      const result = yield* call("thread/start", withModel(model, { tools }))
      return strong(result.thread.id)
    }),
    resumeThread: Effect.fnUntraced(function* (threadId, options) {
      yield* resume(threadId, options)
    }),
    forkThread: Effect.fn("CodexSession.forkThread")(function* (threadId, atTurnRef, options) {
      const result = yield* call("thread/fork", {
        threadId,
        excludeTurns: true,
        ...withTools(settings, options),
        ...(atTurnRef === null ? {} : { lastTurnId: atTurnRef })
      }).pipe(Effect.mapError((error) => (atTurnRef === null ? error : turnNotFound(error, threadId, atTurnRef))))
      return strong(result.thread.id)
    }),
    rollbackThread: Effect.fn("CodexSession.rollbackThread")(function* (threadId, beforeTurnRef) {
      const all = yield* listTurns(threadId)
      const at = all.findIndex((turn) => turn.id === beforeTurnRef)
      if (at < 0) {
        return yield* failure(
          "error",
          `Codex thread ${threadId} has no turn ${beforeTurnRef} (it has ${all.length})`,
          "turn_not_found"
        )
      }
      if (all.slice(at).some((turn) => turn.status === "inProgress")) {
        return yield* failure("error", `Codex thread ${threadId} has a turn in progress; interrupt it first`)
      }
      const revert = call("thread/revert", { threadId, beforeTurnId: beforeTurnRef })
      yield* revert.pipe(
        // thread/revert serves only a thread this process has loaded (turns/list reads the
        // rollout without it): after a restart, load it the way a cold resume does, then revert.
        Effect.catchIf(
          (error) => error.kind !== "crash" && /thread not found/i.test(error.detail),
          () => Effect.zipRight(resume(threadId), revert)
        ),
        Effect.mapError((error) => turnNotFound(error, threadId, beforeTurnRef))
      )
    })
  }
}
