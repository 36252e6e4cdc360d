/**
 * The turn operations of an ACP driver session: a turn is one `session/prompt` (a
 * handoff block goes as a text block ahead of the user's message, delivery `preamble`),
 * its `session/update` reports its events, its reply its end; an interrupt is
 * `session/cancel`, after which every permission request of the prompt is answered
 * `cancelled`, as the protocol asks; an approval's answer selects the agent's option
 * for the decision. One prompt at a time per session (its turn slot).
 */
import type { ApprovalDecision, ProviderFailure, ProviderSessionHandle, TurnEventSink, TurnInput } from "@skein/domain"
import { Effect, Either, Schema } from "effect"
import type { Scope } from "effect"
import { randomUUID } from "node:crypto"
import { handoffPreamble } from "../agents/AgentCommon.js"
import type { Failure } from "../agents/AgentOptions.js"
import type { WaitingApprovals } from "../agents/Approvals.js"
import type * as JsonRpcPeer from "../agents/JsonRpcPeer.js"
import type { TurnSlots } from "../agents/TurnSlot.js"
import * as TurnEvents from "../process/TurnEvents.js"
import type { ActiveTurn, WaitingPermission } from "./AcpEvents.js"
import { permissionAnswer } from "./AcpEvents.js"
import { makeTurnAssembler } from "./AcpItems.js"
import type { PromptResult } from "./AcpProtocol.js"
import { PromptResult as PromptResultSchema } from "./AcpProtocol.js"

const decodePrompt = Schema.decodeUnknownEither(PromptResultSchema)
const text = (value: string) => ({ type: "text", text: value })

export const acpTurns = (session: {
  readonly turns: TurnSlots<ActiveTurn>
  readonly approvals: WaitingApprovals<WaitingPermission>
  readonly peer: JsonRpcPeer.JsonRpcPeer
  readonly endTurn: (turn: ActiveTurn, outcome: Either.Either<PromptResult, ProviderFailure>) => void
  readonly failure: Failure
  readonly scope: Scope.Scope
}) => {
  const { turns, approvals, peer, endTurn, failure, scope } = session

  const runTurn = Effect.fnUntraced(function* <E>(input: TurnInput, onEvents: TurnEventSink<E>) {
    const sessionId = input.nativeRef
    const turn: ActiveTurn = {
      sessionId,
      turnRef: `acp-turn-${randomUUID()}`,
      queue: yield* TurnEvents.make(input.itemDelayMs ?? 0),
      assembler: makeTurnAssembler(),
      asking: new Set()
    }
    if (!turns.claim(sessionId, turn)) {
      return yield* failure("error", `a prompt is already running on ACP session ${sessionId}`)
    }
    turn.queue.offer({ _tag: "TurnStarted", turnRef: turn.turnRef, receivedAt: Date.now() })
    const prompt = [...(input.handoff === null ? [] : [text(handoffPreamble(input.handoff))]), text(input.message)]
    // The reply ends the turn in the reader, after every update that came before it.
    const onReply = (raw: unknown) => {
      const decoded = decodePrompt(raw)
      endTurn(
        turn,
        Either.isRight(decoded)
          ? Either.right(decoded.right)
          : Either.left(failure("error", `unexpected reply to session/prompt: ${decoded.left.message}`))
      )
    }
    yield* peer.call("session/prompt", { sessionId, prompt }, onReply).pipe(
      Effect.catchAll((error) => Effect.sync(() => endTurn(turn, Either.left(error)))),
      Effect.forkIn(scope)
    )
    // A consumer that stops reading before the turn ended cancels the prompt.
    const abandon = Effect.suspend(() =>
      turns.current(sessionId) === turn ? interrupt(sessionId).pipe(Effect.ignore, Effect.forkIn(scope)) : Effect.void
    )
    yield* turn.queue.deliver(onEvents).pipe(Effect.ensuring(abandon))
  })

  const interrupt = (sessionId: string): Effect.Effect<void, ProviderFailure> =>
    Effect.gen(function* () {
      const turn = turns.current(sessionId)
      if (turn === undefined) return
      yield* peer.notify("session/cancel", { sessionId })
      const asking = [...turn.asking]
      turn.asking.clear()
      approvals.dropThread(sessionId)
      yield* Effect.forEach(asking, (id) => peer.respond(id, { result: { outcome: { outcome: "cancelled" } } }), {
        discard: true
      })
    })

  const respondApproval = (sessionId: string, approvalId: string, decision: ApprovalDecision) =>
    Effect.gen(function* () {
      const waiting = approvals.take(sessionId, approvalId)
      if (waiting === undefined) {
        return yield* failure(
          "error",
          `the agent is not waiting for approval ${approvalId} on session ${sessionId} (its prompt ended)`,
          "approval_not_pending"
        )
      }
      turns.current(sessionId)?.asking.delete(waiting.id)
      yield* peer.respond(waiting.id, { result: permissionAnswer(waiting.options, decision) })
    })

  return { runTurn, interrupt, respondApproval } satisfies Pick<
    ProviderSessionHandle,
    "runTurn" | "interrupt" | "respondApproval"
  >
}
