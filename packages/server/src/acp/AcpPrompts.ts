/**
 * A prompt of an ACP session: a slash command (AcpCommands.ts), or a run on the
 * session's provider whose items go to the editor as they are recorded (AcpUpdates.ts),
 * each open approval asked as `session/request_permission` and answered through
 * `approval.respond`. It ends with the run, once every question was answered.
 */
import * as acp from "@agentclientprotocol/sdk/unstable"
import type { Run, StoredEvent, ThreadId, TurnItem } from "@skein/domain"
import { Deferred, Effect, Exit } from "effect"
import type { AcpBackend } from "./AcpBackend.js"
import { commandOf, runCommand } from "./AcpCommands.js"
import type { AcpRun, AcpSessions } from "./AcpSessions.js"
import { requestError } from "./AcpSessions.js"
import { promptText, stopReasonOf, updateOf } from "./AcpUpdates.js"

type Approval = Extract<TurnItem, { readonly type: "approval_request" }>

const say = (context: acp.AgentContext, sessionId: string, text: string) =>
  context.notify(acp.methods.client.session.update, {
    sessionId,
    update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } }
  })

export const makeAcpPrompts = (backend: AcpBackend, sessions: AcpSessions, run: AcpRun) => {
  const askPermission = async (context: acp.AgentContext, sessionId: string, threadId: ThreadId, item: Approval) => {
    const answer = await context.request(acp.methods.client.session.requestPermission, {
      sessionId,
      toolCall: { toolCallId: item.id, title: item.question, status: "pending" },
      options: [
        { optionId: "accept", name: "Allow", kind: "allow_once" },
        { optionId: "decline", name: "Decline", kind: "reject_once" }
      ]
    })
    const { outcome } = answer
    const decision = outcome.outcome === "selected" ? (outcome.optionId === "accept" ? "accept" : "decline") : "cancel"
    await run(backend.respondApproval({ threadId, approvalId: item.approvalId, decision }))
  }

  /**
   * Sends what the run's items show as they are recorded (read from the newest event
   * an earlier prompt of the session saw, else the log's start, so nothing is missed),
   * asks the editor about each open approval, and resolves with the run once it has
   * ended and every question was answered.
   */
  const follow = (context: acp.AgentContext, sessionId: string, threadId: ThreadId, runId: string) => {
    const sent = new Set<string>()
    const asked = new Set<string>()
    const answers: Array<Promise<unknown>> = []
    const show = (item: TurnItem) => {
      const update = updateOf(item, sent.has(item.id))
      sent.add(item.id)
      if (update !== null) void context.notify(acp.methods.client.session.update, { sessionId, update })
      if (item.type === "approval_request" && item.status === "open" && !asked.has(item.approvalId)) {
        asked.add(item.approvalId)
        answers.push(askPermission(context, sessionId, threadId, item))
      }
    }
    const { seen } = sessions
    return Effect.scoped(
      Effect.gen(function* () {
        const ended = yield* Deferred.make<Run>()
        yield* backend.follow(threadId, seen.get(sessionId) ?? 0, (events: ReadonlyArray<StoredEvent>) => {
          for (const { event, threadSequence } of events) {
            if (threadSequence > (seen.get(sessionId) ?? 0)) seen.set(sessionId, threadSequence)
            if (event._tag === "TurnItemRecorded" && event.item.runId === runId) show(event.item)
            if (event._tag === "RunEnded" && event.run.id === runId) Deferred.unsafeDone(ended, Exit.succeed(event.run))
          }
        })
        const ran = yield* Deferred.await(ended)
        yield* Effect.promise(() => Promise.allSettled(answers))
        return ran
      })
    )
  }

  /** `session/prompt`. */
  return async (context: acp.AgentContext, params: acp.PromptRequest): Promise<acp.PromptResponse> => {
    const { provider, threadId } = sessions.sessionOf(params.sessionId)
    const message = promptText(params.prompt)
    const command = commandOf(message)
    if (command !== undefined) {
      const said = await sessions.call(
        runCommand(backend, threadId, command, (name) =>
          Effect.promise(() => sessions.setProvider(params.sessionId, name))
        )
      )
      await say(context, params.sessionId, said)
      return { stopReason: "end_turn" }
    }
    const started = await sessions.call(backend.startRun({ threadId, provider, message }))
    const exit = await run(follow(context, params.sessionId, threadId, started.id))
    if (Exit.isFailure(exit)) throw requestError(exit.cause)
    const ended = exit.value
    if (ended.status === "failed" && ended.failure !== null) {
      await say(context, params.sessionId, `The run failed (${ended.failure.reason}): ${ended.failure.message}`)
    }
    return { stopReason: stopReasonOf(ended) }
  }
}
