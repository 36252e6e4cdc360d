/**
 * A Claude Code session (the port's ProviderSessionHandle): a pool of `claude -p`
 * processes, one per native thread in use, their lines decoded by ClaudeEvents. See
 * ClaudeAdapter for what the driver does.
 */
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type {
  ApprovalDecision,
  NativeThreadHandle,
  ProviderSessionHandle,
  TurnInput,
  TurnEventSink
} from "@skein/domain"
import { ProviderFailure } from "@skein/domain"
import { Deferred, Duration, Effect, ExecutionStrategy, Exit, Schedule, Scope } from "effect"
import { clip, handoffPreamble } from "../agents/AgentCommon.js"
import type { Failure } from "../agents/AgentOptions.js"
import { failureOf } from "../agents/AgentOptions.js"
import { makeWaitingApprovals } from "../agents/Approvals.js"
import type { LocatedBinary } from "../binary/AgentBinary.js"
import { LineProcess as Lines } from "../process/LineProcess.js"
import * as TurnEvents from "../process/TurnEvents.js"
import type { ClaudeAdapterOptions } from "./ClaudeAdapter.js"
import type { ClaudeProcess, Shared, Turn } from "./ClaudeEvents.js"
import { answerOf, makeClaudeEvents } from "./ClaudeEvents.js"
import { launchArgs } from "./ClaudeLaunches.js"
import { controlRequest, controlSuccess, userLine } from "./ClaudeProtocol.js"
import { lastMessageOf, messageBefore, transcriptPath } from "./ClaudeTranscript.js"

const INITIALIZE_TIMEOUT_MS = 60_000
const CONTROL_TIMEOUT_MS = 15_000

export const openSession = (
  options: ClaudeAdapterOptions,
  env: Record<string, string>,
  binary: LocatedBinary,
  workspace: string | null,
  shared: Shared
): Effect.Effect<ProviderSessionHandle, ProviderFailure, Scope.Scope> =>
  Effect.gen(function* () {
    const provider = options.name
    const failure = failureOf(provider)
    const policy = options.approvals ?? "ask"
    const idleMs = options.processIdleMs ?? 120_000
    const cwd = yield* Effect.sync(() => {
      const dir = workspace ?? options.stateDir
      Fs.mkdirSync(dir, { recursive: true })
      return Fs.realpathSync(dir)
    })
    const configDir = env.CLAUDE_CONFIG_DIR ?? Path.join(env.HOME ?? "", ".claude")
    const sessionScope = yield* Effect.scope
    const processes = new Map<string, ClaudeProcess>()
    const opening = new Map<string, Deferred.Deferred<ClaudeProcess, ProviderFailure>>()
    const exited = yield* Deferred.make<{ readonly code: number | null; readonly signal: string | null }>()
    let controlCounter = 0
    let closed = false
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        closed = true
        Deferred.unsafeDone(exited, Exit.succeed({ code: null, signal: null }))
      })
    )

    const { onLine } = makeClaudeEvents({ provider, failure, policy, shared })

    const control = (cp: ClaudeProcess, subtype: "initialize" | "interrupt", timeoutMs: number) =>
      Effect.gen(function* () {
        const requestId = `skein-${++controlCounter}`
        const answer = yield* Deferred.make<void, ProviderFailure>()
        cp.control.set(requestId, answer)
        yield* cp.proc.send(controlRequest(requestId, subtype))
        yield* Deferred.await(answer).pipe(
          Effect.timeoutFail({
            duration: Duration.millis(timeoutMs),
            onTimeout: () => failure("timeout", `Claude Code did not answer ${subtype} within ${timeoutMs} ms`)
          }),
          Effect.ensuring(Effect.sync(() => cp.control.delete(requestId)))
        )
      })

    /** Why a process ended before it was ready, as a typed failure. */
    const refusal = (sessionId: string, how: string): ProviderFailure =>
      /already in use/i.test(how)
        ? failure(
            "error",
            `Claude Code refused session ${sessionId}: it is already in use (${clip(how, 400)})`,
            "session_in_use"
          )
        : /no conversation found/i.test(how)
          ? failure(
              "resume_failed",
              `Claude Code has no conversation ${sessionId} (${clip(how, 400)})`,
              "conversation_not_found"
            )
          : failure("spawn", `claude did not start for session ${sessionId}: it ${clip(how, 1000)}`)

    const spawnProcess = (sessionId: string): Effect.Effect<ClaudeProcess, ProviderFailure> =>
      Effect.gen(function* () {
        const scope = yield* Scope.fork(sessionScope, ExecutionStrategy.sequential)
        return yield* Effect.gen(function* () {
          const model = shared.models.get(sessionId) ?? options.model ?? null
          const proc = yield* Lines.spawn({
            command: binary.path,
            args: [
              ...binary.leadingArgs,
              "-p",
              "--input-format",
              "stream-json",
              "--output-format",
              "stream-json",
              "--verbose",
              "--permission-prompt-tool",
              "stdio",
              ...(options.permissionMode === undefined ? [] : ["--permission-mode", options.permissionMode]),
              ...(model === null ? [] : ["--model", model]),
              ...launchArgs(sessionId, shared.launches.get(sessionId))
            ],
            env,
            cwd,
            graceMs: options.graceMs,
            provider
          }).pipe(Scope.extend(scope))
          const cp: ClaudeProcess = {
            sessionId,
            proc,
            scope,
            control: new Map(),
            approvals: makeWaitingApprovals(),
            turn: null,
            lastActive: Date.now(),
            sent: false
          }
          // The reader: when stdout ends, the process is gone; a turn on it fails as a crash.
          yield* proc
            .readMessages((raw) => onLine(cp, raw))
            .pipe(
              Effect.zipRight(proc.exited),
              Effect.zipRight(proc.describeExit),
              Effect.flatMap((how) =>
                Effect.sync(() => {
                  if (processes.get(sessionId) === cp) processes.delete(sessionId)
                  // A new session or a fork that was sent a message exists on disk now (Claude Code
                  // writes the message first): it resumes like any other, since starting it "new"
                  // again would be refused as already in use.
                  const planned = shared.launches.get(sessionId)
                  if (cp.sent && planned !== undefined && planned.kind !== "rewind" && transcript(sessionId) !== null) {
                    shared.launches.clear(sessionId)
                  }
                  const gone = failure("crash", `the claude process of session ${sessionId} ${how}`)
                  for (const waiting of cp.control.values()) Deferred.unsafeDone(waiting, Exit.fail(gone))
                  cp.control.clear()
                  const turn = cp.turn
                  cp.turn = null
                  turn?.queue.end(Exit.fail(gone))
                })
              ),
              Effect.zipRight(Effect.forkDaemon(Scope.close(scope, Exit.void))),
              Effect.forkIn(scope)
            )
          const ended = Effect.flatMap(proc.exited, () =>
            Effect.flatMap(proc.describeExit, (how) => Effect.fail(refusal(sessionId, how)))
          )
          yield* Effect.raceFirst(control(cp, "initialize", INITIALIZE_TIMEOUT_MS), ended)
          return cp
        }).pipe(Effect.onError(() => Scope.close(scope, Exit.void)))
      })

    /** The live process of a session, starting (or resuming) one if needed; concurrent callers share one start. */
    const processFor = (sessionId: string): Effect.Effect<ClaudeProcess, ProviderFailure> =>
      Effect.suspend(() => {
        if (closed) return Effect.fail(failure("error", "the Claude session was closed"))
        const live = processes.get(sessionId)
        if (live !== undefined) return Effect.succeed(live)
        const starting = opening.get(sessionId)
        if (starting !== undefined) return Deferred.await(starting)
        return Effect.gen(function* () {
          const started = yield* Deferred.make<ClaudeProcess, ProviderFailure>()
          opening.set(sessionId, started)
          return yield* spawnProcess(sessionId).pipe(
            Effect.onExit((outcome) =>
              Effect.sync(() => {
                opening.delete(sessionId)
                if (Exit.isSuccess(outcome)) processes.set(sessionId, outcome.value)
                Deferred.unsafeDone(started, outcome)
              })
            )
          )
        })
      })

    const stopProcess = (cp: ClaudeProcess) =>
      Effect.suspend(() => {
        if (processes.get(cp.sessionId) === cp) processes.delete(cp.sessionId)
        return Scope.close(cp.scope, Exit.void)
      })

    // Idle release: a process without a turn or a pending approval for `idleMs` stops.
    yield* Effect.suspend(() =>
      Effect.forEach(
        [...processes.values()].filter(
          (cp) => cp.turn === null && cp.approvals.size() === 0 && Date.now() - cp.lastActive > idleMs
        ),
        stopProcess,
        { discard: true }
      )
    ).pipe(
      Effect.repeat(Schedule.spaced(Duration.millis(Math.max(250, Math.min(idleMs / 2, 5000))))),
      Effect.forkScoped
    )

    const transcript = (sessionId: string) => transcriptPath(configDir, cwd, sessionId)

    return {
      pid: null,
      ...claudeThreads({ shared, failure, processes, processFor, stopProcess, transcript }),
      ...claudeTurns({ shared, failure, processes, processFor, control, sessionScope }),
      summarise: () => Effect.fail(failure("unsupported", "the Claude driver does not write handoff summaries")),
      exited: Deferred.await(exited)
    } satisfies ProviderSessionHandle
  })

const strong = (nativeRef: string): NativeThreadHandle => ({ nativeRef, strength: "strong" })

/**
 * The thread operations of the port: a new session, a resume, a fork (at a turn), a
 * rollback, each a launch plan for the session's next process.
 */
const claudeThreads = (session: {
  readonly shared: Shared
  readonly failure: Failure
  readonly processes: ReadonlyMap<string, ClaudeProcess>
  readonly processFor: (sessionId: string) => Effect.Effect<ClaudeProcess, ProviderFailure>
  readonly stopProcess: (cp: ClaudeProcess) => Effect.Effect<void>
  readonly transcript: (sessionId: string) => string | null
}) => {
  const { shared, failure, processes, processFor, stopProcess, transcript } = session
  return {
    startThread: ({ model }) =>
      Effect.gen(function* () {
        const sessionId = Crypto.randomUUID()
        if (model !== null) shared.models.set(sessionId, model)
        shared.launches.set(sessionId, { kind: "new" })
        yield* processFor(sessionId).pipe(Effect.tapError(() => Effect.sync(() => shared.launches.clear(sessionId))))
        return strong(sessionId)
      }),
    resumeThread: (sessionId) => Effect.asVoid(processFor(sessionId)),
    forkThread: (sessionId, atTurnRef) =>
      Effect.gen(function* () {
        let at: string | null = null
        if (atTurnRef !== null) {
          const file = transcript(sessionId)
          const last = shared.turnEnds.get(atTurnRef) ?? (file === null ? undefined : lastMessageOf(file, atTurnRef))
          if (last === undefined) {
            return yield* failure("error", `Claude session ${sessionId} has no turn ${atTurnRef}`, "turn_not_found")
          }
          at = last
        }
        const forked = Crypto.randomUUID()
        const model = shared.models.get(sessionId)
        if (model !== undefined) shared.models.set(forked, model)
        shared.launches.set(forked, { kind: "fork", from: sessionId, at })
        if (at !== null) shared.tips.set(forked, at)
        yield* processFor(forked).pipe(Effect.tapError(() => Effect.sync(() => shared.launches.clear(forked))))
        return strong(forked)
      }),
    rollbackThread: (sessionId, beforeTurnRef) =>
      Effect.gen(function* () {
        const live = processes.get(sessionId)
        if (live?.turn)
          return yield* failure("error", `Claude session ${sessionId} has a turn running; interrupt it first`)
        let before = shared.turnStarts.get(beforeTurnRef)
        if (before === undefined) {
          const file = transcript(sessionId)
          before = file === null ? undefined : messageBefore(file, beforeTurnRef)
        }
        if (before === undefined) {
          return yield* failure("error", `Claude session ${sessionId} has no turn ${beforeTurnRef}`, "turn_not_found")
        }
        if (before === null) {
          return yield* failure(
            "unsupported",
            `Claude Code cannot roll session ${sessionId} back to before its first turn; start a new thread instead`
          )
        }
        shared.launches.set(sessionId, { kind: "rewind", at: before })
        shared.tips.set(sessionId, before)
        // The next process of this session starts at that message.
        if (live !== undefined) yield* stopProcess(live)
      })
  } satisfies Pick<ProviderSessionHandle, "startThread" | "resumeThread" | "forkThread" | "rollbackThread">
}

/** The turn operations of the port: a turn (one user message), an interrupt, an approval's answer. */
const claudeTurns = (session: {
  readonly shared: Shared
  readonly failure: Failure
  readonly processes: ReadonlyMap<string, ClaudeProcess>
  readonly processFor: (sessionId: string) => Effect.Effect<ClaudeProcess, ProviderFailure>
  readonly control: (
    cp: ClaudeProcess,
    subtype: "initialize" | "interrupt",
    timeoutMs: number
  ) => Effect.Effect<void, ProviderFailure>
  readonly sessionScope: Scope.Scope
}) => {
  const { shared, failure, processes, processFor, control, sessionScope } = session
  const runTurn = <E>(input: TurnInput, onEvents: TurnEventSink<E>): Effect.Effect<void, ProviderFailure | E> =>
    Effect.gen(function* () {
      const sessionId = input.nativeRef
      const cp = yield* processFor(sessionId)
      if (cp.turn !== null) {
        return yield* Effect.fail(failure("error", `a turn is already running on Claude session ${sessionId}`))
      }
      const uuid = Crypto.randomUUID()
      const turn: Turn = {
        uuid,
        queue: yield* TurnEvents.make(input.itemDelayMs ?? 0),
        toolUses: new Map(),
        childrenDone: new Set(),
        last: null,
        interrupting: false
      }
      cp.turn = turn
      cp.lastActive = Date.now()
      cp.sent = true
      const tip = shared.tips.get(sessionId)
      if (tip !== undefined) shared.turnStarts.set(uuid, tip)
      const texts = input.handoff === null ? [input.message] : [handoffPreamble(input.handoff), input.message]
      turn.queue.offer({ _tag: "TurnStarted", turnRef: uuid, receivedAt: Date.now() })
      yield* cp.proc.send(userLine(uuid, texts)).pipe(
        Effect.tapError((error) =>
          Effect.sync(() => {
            if (cp.turn === turn) cp.turn = null
            turn.queue.end(Exit.fail(error))
          })
        ),
        Effect.ignore
      )
      const abandon = Effect.suspend(() =>
        cp.turn === turn ? interrupt(sessionId).pipe(Effect.ignore, Effect.forkIn(sessionScope)) : Effect.void
      )
      yield* turn.queue.deliver(onEvents).pipe(Effect.ensuring(abandon))
    })

  const interrupt = (sessionId: string): Effect.Effect<void, ProviderFailure> =>
    Effect.suspend(() => {
      const cp = processes.get(sessionId)
      if (cp === undefined || cp.turn === null) return Effect.void
      cp.turn.interrupting = true
      return control(cp, "interrupt", CONTROL_TIMEOUT_MS)
    })

  const respondApproval = (sessionId: string, approvalId: string, decision: ApprovalDecision) =>
    Effect.suspend(() => {
      const cp = processes.get(sessionId)
      const waiting = cp?.approvals.take(sessionId, approvalId)
      if (cp === undefined || waiting === undefined) {
        return Effect.fail(
          failure(
            "error",
            `Claude Code is not waiting for approval ${approvalId} in session ${sessionId} (its turn ended)`,
            "approval_not_pending"
          )
        )
      }
      if (decision === "cancel" && cp.turn !== null) cp.turn.interrupting = true
      return cp.proc.send(controlSuccess(waiting.requestId, answerOf(decision, waiting.input)))
    })

  return { runTurn, interrupt, respondApproval } satisfies Pick<
    ProviderSessionHandle,
    "runTurn" | "interrupt" | "respondApproval"
  >
}
