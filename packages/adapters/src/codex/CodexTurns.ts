/**
 * The turn operations of a Codex driver session: a turn (`turn/start`, its events until
 * `turn/completed`), a steer (`turn/steer`: more input for the running turn, which
 * Codex takes in before the turn ends), an interrupt (`turn/interrupt`, once the
 * turn's id is known), an approval's answer. One turn at a time per Codex thread (its
 * turn slot).
 */
import type { ApprovalDecision, ProviderFailure, ProviderSessionHandle, TurnEventSink, TurnInput } from "@skein/domain"
import { Deferred, Effect, Exit } from "effect"
import type { Scope } from "effect"
import { handoffPreamble } from "../agents/AgentCommon.js"
import type { Failure } from "../agents/AgentOptions.js"
import type { WaitingApprovals } from "../agents/Approvals.js"
import type * as JsonRpcPeer from "../agents/JsonRpcPeer.js"
import type { TurnSlots } from "../agents/TurnSlot.js"
import * as TurnEvents from "../process/TurnEvents.js"
import type { ActiveTurn } from "./CodexEvents.js"
import type { UserTextInput } from "./CodexProtocol.js"
import type { Call } from "./CodexThreads.js"

const text = (value: string): UserTextInput => ({ type: "text", text: value, text_elements: [] })

/** The turn operations of the port: a turn (its events), a steer, an interrupt, an approval's answer. */
export const codexTurns = (session: {
  readonly turns: TurnSlots<ActiveTurn>
  readonly approvals: WaitingApprovals<JsonRpcPeer.RpcId>
  readonly call: Call
  readonly peer: JsonRpcPeer.JsonRpcPeer
  readonly endTurn: (threadId: string, turn: ActiveTurn) => void
  /** Ends a turn held for its agents (CodexChildren.ts) as interrupted. */
  readonly stopWaiting: (turn: ActiveTurn) => void
  readonly failure: Failure
  readonly scope: Scope.Scope
}) => {
  const { turns, approvals, call, peer, endTurn, stopWaiting, failure, scope } = session
  const runTurn = Effect.fnUntraced(function* <E>(input: TurnInput, onEvents: TurnEventSink<E>) {
    const threadId = input.nativeRef
    const turn: ActiveTurn = {
      threadId,
      queue: yield* TurnEvents.make(input.itemDelayMs ?? 0),
      turnId: yield* Deferred.make<string, ProviderFailure>(),
      id: null,
      usageReport: undefined,
      agents: new Map(),
      held: null
    }
    if (!turns.claim(threadId, turn)) {
      return yield* Effect.fail(failure("error", `a turn is already running on Codex thread ${threadId}`))
    }
    const delivered = input.handoff === null ? [] : [text(handoffPreamble(input.handoff))]
    const model = input.model ?? null
    yield* call(
      "turn/start",
      { threadId, input: [...delivered, text(input.message)], ...(model === null ? {} : { model }) },
      (result) => {
        // In the reader, before any notification that follows the reply.
        const id = (result as { turn?: { id?: unknown } }).turn?.id
        if (typeof id !== "string") return
        turn.id = id
        Deferred.unsafeDone(turn.turnId, Exit.succeed(id))
        turn.queue.offer({ _tag: "TurnStarted", turnRef: id, receivedAt: Date.now() })
      }
    ).pipe(
      Effect.tapError((error) =>
        Effect.sync(() => {
          endTurn(threadId, turn)
          Deferred.unsafeDone(turn.turnId, Exit.fail(error))
          turn.queue.end(Exit.fail(error))
        })
      ),
      Effect.ignore
    )
    // A consumer that stops reading before the turn ended interrupts the Codex turn.
    const abandon = Effect.suspend(() =>
      turns.current(threadId) === turn ? interrupt(threadId).pipe(Effect.ignore, Effect.forkIn(scope)) : Effect.void
    )
    yield* turn.queue.deliver(onEvents).pipe(Effect.ensuring(abandon))
  })

  const steer = Effect.fn("CodexSession.steer")(function* (threadId: string, message: string) {
    const turn = turns.current(threadId)
    if (turn === undefined) {
      return yield* failure("error", `no turn is running on Codex thread ${threadId}`, "turn_not_running")
    }
    const expectedTurnId = yield* Deferred.await(turn.turnId)
    yield* call("turn/steer", { threadId, expectedTurnId, input: [text(message)] })
  })

  const interrupt: (threadId: string) => Effect.Effect<void, ProviderFailure> = Effect.fn("CodexSession.interrupt")(
    function* (threadId: string) {
      const turn = turns.current(threadId)
      if (turn === undefined) return
      // Codex's own turn is over; what runs is the agents it started: stop waiting for them.
      if (turn.held !== null) return stopWaiting(turn)
      const turnId = yield* Deferred.await(turn.turnId)
      yield* call("turn/interrupt", { threadId, turnId })
    }
  )

  const respondApproval = Effect.fn("CodexSession.respondApproval")(function* (
    threadId: string,
    approvalId: string,
    decision: ApprovalDecision
  ) {
    const rpcId = approvals.take(threadId, approvalId)
    if (rpcId === undefined) {
      return yield* failure(
        "error",
        `Codex is not waiting for approval ${approvalId} on thread ${threadId} (its turn ended)`,
        "approval_not_pending"
      )
    }
    yield* peer.respond(rpcId, { result: { decision } })
  })

  return { runTurn, steer, interrupt, respondApproval } satisfies Pick<
    ProviderSessionHandle,
    "runTurn" | "steer" | "interrupt" | "respondApproval"
  >
}
