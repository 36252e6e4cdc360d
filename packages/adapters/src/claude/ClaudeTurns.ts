/**
 * The turn operations of a Claude driver session: a turn (one user message, its events
 * until the `result` line), a steer (another user message written while the turn runs;
 * see `Turn.steers`), an interrupt (a control request), an approval's answer. A
 * turn keeps its session's process in use until it has ended, even when its caller
 * stopped reading first (the turn is then interrupted).
 */
import * as Crypto from "node:crypto"
import type { ApprovalDecision, ProviderFailure, ProviderSessionHandle, TurnEventSink, TurnInput } from "@skein/domain"
import { Effect, Exit, Scope } from "effect"
import { handoffPreamble } from "../agents/AgentCommon.js"
import type { Failure } from "../agents/AgentOptions.js"
import * as TurnEvents from "../process/TurnEvents.js"
import type { ClaudeProcess, Shared, Turn } from "./ClaudeEvents.js"
import { answerOf } from "./ClaudeEvents.js"
import type { ClaudePool } from "./ClaudePool.js"
import { control } from "./ClaudeProcess.js"
import { controlSuccess, userLine } from "./ClaudeProtocol.js"

const CONTROL_TIMEOUT_MS = 15_000

export interface ClaudeTurnsContext {
  readonly shared: Shared
  readonly failure: Failure
  readonly pool: ClaudePool
  /** Where a turn abandoned by its caller is interrupted and waited for. */
  readonly sessionScope: Scope.Scope
}

type Interrupt = (sessionId: string) => Effect.Effect<void, ProviderFailure>

/** Interrupts the turn running in a session, if one is: a control request. */
const interruptOf = ({ failure, pool }: ClaudeTurnsContext): Interrupt =>
  Effect.fn("ClaudeSession.interrupt")(function* (sessionId: string) {
    const cp = pool.live(sessionId)
    if (cp === undefined || cp.turn === null) return
    cp.turn.interrupting = true
    yield* control(failure, cp, "interrupt", CONTROL_TIMEOUT_MS)
  })

/** A new turn on `cp`, its start reported; null when a turn runs there already. */
const begin = (shared: Shared, cp: ClaudeProcess, input: TurnInput): Effect.Effect<Turn | null> =>
  Effect.map(TurnEvents.make(input.itemDelayMs ?? 0), (queue) => {
    if (cp.turn !== null) return null
    const uuid = Crypto.randomUUID()
    const turn: Turn = {
      uuid,
      queue,
      toolUses: new Map(),
      childrenDone: new Set(),
      steers: new Set(),
      spent: undefined,
      last: null,
      interrupting: false
    }
    cp.turn = turn
    cp.sent = true
    const tip = shared.tips.get(cp.sessionId)
    if (tip !== undefined) shared.turnStarts.set(uuid, tip)
    queue.offer({ _tag: "TurnStarted", turnRef: uuid, receivedAt: Date.now() })
    return turn
  })

/**
 * Once the caller is done with a turn: a turn still running on Claude is interrupted,
 * and the process stays in use (`lease`) until that turn's end.
 */
const settle = (
  sessionScope: Scope.Scope,
  interrupt: Interrupt,
  cp: ClaudeProcess,
  turn: Turn,
  lease: Scope.CloseableScope
): Effect.Effect<void> =>
  Effect.suspend(() =>
    cp.turn === turn
      ? interrupt(cp.sessionId).pipe(
          Effect.ignore,
          Effect.zipRight(turn.queue.ended),
          Effect.ensuring(Scope.close(lease, Exit.void)),
          Effect.forkIn(sessionScope),
          Effect.asVoid
        )
      : Scope.close(lease, Exit.void)
  )

/** A turn on `cp`: the user's message (after the handoff's preamble) written, its events delivered until its end. */
const runOn = Effect.fnUntraced(function* <E>(
  context: ClaudeTurnsContext,
  interrupt: Interrupt,
  cp: ClaudeProcess,
  lease: Scope.CloseableScope,
  input: TurnInput,
  onEvents: TurnEventSink<E>
) {
  const turn = yield* begin(context.shared, cp, input)
  if (turn === null) {
    yield* Scope.close(lease, Exit.void)
    return yield* context.failure("error", `a turn is already running on Claude session ${cp.sessionId}`)
  }
  const texts = input.handoff === null ? [input.message] : [handoffPreamble(input.handoff), input.message]
  yield* cp.proc.send(userLine(turn.uuid, texts)).pipe(
    Effect.tapError((error) =>
      Effect.sync(() => {
        if (cp.turn === turn) cp.turn = null
        turn.queue.end(Exit.fail(error))
      })
    ),
    Effect.ignore
  )
  yield* turn.queue.deliver(onEvents).pipe(
    Effect.ensuring(settle(context.sessionScope, interrupt, cp, turn, lease)),
    // It ended (failed, interrupted) with a steered message Claude Code still holds:
    // the process would run it with nobody reading. It goes; the next turn resumes.
    Effect.ensuring(Effect.suspend(() => (turn.steers.size > 0 ? context.pool.stop(cp) : Effect.void)))
  )
})

/** Another user message written into the running turn. */
const steerOf = ({ failure, pool }: ClaudeTurnsContext) =>
  Effect.fn("ClaudeSession.steer")(function* (sessionId: string, message: string) {
    const cp = pool.live(sessionId)
    const turn = cp?.turn ?? null
    if (cp === undefined || turn === null || turn.interrupting) {
      return yield* failure("error", `no turn is running on Claude session ${sessionId}`, "turn_not_running")
    }
    const uuid = Crypto.randomUUID()
    turn.steers.add(uuid)
    yield* cp.proc
      .send(userLine(uuid, [message]))
      .pipe(Effect.tapError(() => Effect.sync(() => turn.steers.delete(uuid))))
  })

/** The answer to an approval Claude Code waits for. */
const respondApprovalOf = ({ failure, pool }: ClaudeTurnsContext) =>
  Effect.fn("ClaudeSession.respondApproval")(function* (
    sessionId: string,
    approvalId: string,
    decision: ApprovalDecision
  ) {
    const cp = pool.live(sessionId)
    const waiting = cp?.approvals.take(sessionId, approvalId)
    if (cp === undefined || waiting === undefined) {
      return yield* failure(
        "error",
        `Claude Code is not waiting for approval ${approvalId} in session ${sessionId} (its turn ended)`,
        "approval_not_pending"
      )
    }
    if (decision === "cancel" && cp.turn !== null) cp.turn.interrupting = true
    yield* cp.proc.send(controlSuccess(waiting.requestId, answerOf(decision, waiting.input)))
  })

export const claudeTurns = (
  context: ClaudeTurnsContext
): Pick<ProviderSessionHandle, "runTurn" | "steer" | "interrupt" | "respondApproval"> => {
  const interrupt = interruptOf(context)
  return {
    runTurn: Effect.fnUntraced(function* <E>(input: TurnInput, onEvents: TurnEventSink<E>) {
      yield* context.pool.withTurn(input.nativeRef, (cp, lease) =>
        runOn(context, interrupt, cp, lease, input, onEvents)
      )
    }),
    steer: steerOf(context),
    interrupt,
    respondApproval: respondApprovalOf(context)
  }
}
