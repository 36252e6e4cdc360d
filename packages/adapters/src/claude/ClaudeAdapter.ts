/**
 * The Claude Code driver. A `claude -p` process in streaming JSON mode serves exactly
 * one Claude session, so a Skein session (one provider instance and workspace) holds
 * a small pool of them: one per native thread in use, started on demand, released
 * after `processIdleMs` without a turn, all stopped when the Skein session closes.
 *
 * - Threads: a new session gets an id Skein chooses (`--session-id`); an existing one
 *   is resumed (`--resume`); a fork is a new id (`--fork-session`), at a turn with
 *   `--resume-session-at` its last message. Each process starts with an `initialize`
 *   control request: its answer says the session loaded, and a refusal ("already in
 *   use", "no conversation found") ends the process with a message on stderr, which
 *   becomes a typed failure.
 * - Turns: one user message, whose `uuid` (chosen by Skein) is the turn's ref and the
 *   id of that message in Claude's transcript. A handoff block is a text block ahead
 *   of the user's text in that message (delivery `preamble`). The turn ends with the
 *   `result` line. An interrupt is a control request.
 * - Rollback: the session resumes at the message before the turn
 *   (`--resume-session-at`), which Claude Code makes the session's branch with the next
 *   message; until then the plan is kept on disk (ClaudeLaunches).
 * - Approvals: `--permission-prompt-tool stdio` makes the CLI ask before a tool runs;
 *   each request is an `approval_request` item (or answered by the instance's policy).
 * - Subagents: the Task/Agent tool's runs are `child_agent` items; background agents
 *   are turned off (`CLAUDE_CODE_DISABLE_BACKGROUND_TASKS`), so a subagent ends within
 *   the turn that started it.
 */
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type {
  ApprovalDecision,
  NativeThreadHandle,
  ProviderAdapter,
  ProviderSessionHandle,
  TurnInput,
  TurnItemContent,
  TurnEventSink
} from "@skein/domain"
import { defaultCapabilities, makeId, ProviderFailure } from "@skein/domain"
import type { ProviderCapabilities } from "@skein/domain"
import { Deferred, Duration, Effect, Either, ExecutionStrategy, Exit, Schedule, Schema, Scope } from "effect"
import { clip, handoffPreamble } from "../agents/AgentCommon.js"
import type { AgentOptions } from "../agents/AgentOptions.js"
import { failureOf, makeAgentAdapter } from "../agents/AgentOptions.js"
import type { WaitingApprovals } from "../agents/Approvals.js"
import { makeWaitingApprovals, routeApproval } from "../agents/Approvals.js"
import type { AgentBinarySpec, LocatedBinary } from "../binary/AgentBinary.js"
import { platformSuffixes } from "../binary/AgentBinary.js"
import type { LineProcess } from "../process/LineProcess.js"
import { LineProcess as Lines, scopedEnv } from "../process/LineProcess.js"
import * as TurnEvents from "../process/TurnEvents.js"
import type { ToolUse } from "./ClaudeItems.js"
import { childEnded, childStarted, permissionQuestion, resultText, SUBAGENT_TOOLS, toolItem } from "./ClaudeItems.js"
import type { Launches } from "./ClaudeLaunches.js"
import { launchArgs, makeLaunches } from "./ClaudeLaunches.js"
import type { ResultLine } from "./ClaudeProtocol.js"
import { controlError, controlRequest, controlSuccess, knownLineTypes, Line, userLine } from "./ClaudeProtocol.js"
import { lastMessageOf, messageBefore, transcriptPath } from "./ClaudeTranscript.js"

/** The Claude Code versions this driver was tested with. */
export const claudeBinarySpec: AgentBinarySpec = {
  driver: "claude",
  executable: "claude",
  npmPackage: "@anthropic-ai/claude-code",
  tested: { min: "2.1.332", below: "2.2.0" },
  platformPackages: platformSuffixes().map((suffix) => `@anthropic-ai/claude-code-${suffix}`),
  nativeIn: (platformDir) => [Path.join(platformDir, "claude")]
}

/**
 * What the Claude driver can do: resume, fork at a turn, native rollback; handoffs as a
 * preamble. An approval waits in its turn: once the turn is over, Claude Code takes no decision.
 */
export const claudeCapabilities: ProviderCapabilities = defaultCapabilities({
  resume: true,
  fork: "at_turn",
  rollback: "native",
  handoffDelivery: ["preamble"],
  summarise: false,
  approvalsOutliveTurn: false
})

export const ClaudePermissionMode = Schema.Literal("default", "acceptEdits", "plan", "bypassPermissions")
export type ClaudePermissionMode = typeof ClaudePermissionMode.Type

/**
 * Claude Code's config directory is CLAUDE_CONFIG_DIR; the driver keeps its launch plans
 * in `stateDir`. The default command is `claude` on PATH (the platform package's binary).
 */
export interface ClaudeAdapterOptions extends AgentOptions {
  /** Claude Code's `--permission-mode`; default: its own. */
  readonly permissionMode?: ClaudePermissionMode | undefined
  /** A process with no turn for this long is stopped (resumed on the next turn). Default 120 s. */
  readonly processIdleMs?: number | undefined
}

const INITIALIZE_TIMEOUT_MS = 60_000
const CONTROL_TIMEOUT_MS = 15_000

/** Variables the driver always sets, unless the instance's env says otherwise. */
const DRIVER_ENV: Record<string, string> = {
  // A subagent must end within the turn that started it, not report back in a later one.
  CLAUDE_CODE_DISABLE_BACKGROUND_TASKS: "1",
  // A headless child must not replace its own executable mid-session.
  DISABLE_AUTOUPDATER: "1"
}

export const makeClaudeAdapter = (options: ClaudeAdapterOptions): ProviderAdapter => {
  const env = scopedEnv({ ...DRIVER_ENV, ...options.env }, ["CLAUDE_CONFIG_DIR"])
  const shared: Shared = {
    launches: makeLaunches(options.stateDir),
    turnEnds: new Map(),
    turnStarts: new Map(),
    tips: new Map(),
    models: new Map()
  }
  return makeAgentAdapter({
    spec: claudeBinarySpec,
    options,
    env,
    runtimeMode: `approvals=${options.approvals ?? "ask"};permissions=${options.permissionMode ?? "default"}`,
    open: (binary, workspace) => openSession(options, env, binary, workspace, shared)
  })
}

/** What the instance remembers across its sessions. */
interface Shared {
  readonly launches: Launches
  /** Turn (first message uuid) → its last message, for turns that ran in this Skein. */
  readonly turnEnds: Map<string, string>
  /** Turn → the message it followed, when known. */
  readonly turnStarts: Map<string, string | null>
  /** Session → its last message, when this Skein knows it. */
  readonly tips: Map<string, string>
  /** Session → the model it was started with. */
  readonly models: Map<string, string>
}

interface Turn {
  readonly uuid: string
  readonly queue: TurnEvents.TurnQueue
  readonly toolUses: Map<string, ToolUse>
  readonly childrenDone: Set<string>
  last: string | null
  interrupting: boolean
}

interface Waiting {
  readonly requestId: string
  readonly input: unknown
}

interface ClaudeProcess {
  readonly sessionId: string
  readonly proc: LineProcess
  readonly scope: Scope.CloseableScope
  readonly control: Map<string, Deferred.Deferred<void, ProviderFailure>>
  /** Permission requests waiting for a client (the thread is the session). */
  readonly approvals: WaitingApprovals<Waiting>
  turn: Turn | null
  lastActive: number
  /** Whether a user message was written to this process. */
  sent: boolean
}

const decodeLine = Schema.decodeUnknownEither(Line)

const openSession = (
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

    const offer = (turn: Turn, item: TurnItemContent) => turn.queue.offer({ _tag: "Item", item })

    const endTurn = (cp: ClaudeProcess, result: ResultLine) => {
      const turn = cp.turn
      if (turn === null) return
      cp.turn = null
      cp.lastActive = Date.now()
      cp.approvals.clear()
      // The turn's first message is on disk now: the session starts like any other from here on.
      shared.launches.clear(cp.sessionId)
      if (turn.last !== null) {
        shared.turnEnds.set(turn.uuid, turn.last)
        shared.tips.set(cp.sessionId, turn.last)
      }
      const usage = result.usage
      const ok = result.subtype === "success" && result.is_error !== true
      if (ok) {
        turn.queue.offer({
          _tag: "TurnCompleted",
          turnRef: turn.uuid,
          ...(usage === undefined
            ? {}
            : {
                usage: {
                  inputTokens: usage.input_tokens ?? 0,
                  outputTokens: usage.output_tokens ?? 0,
                  ...(usage.cache_read_input_tokens === undefined
                    ? {}
                    : { cachedInputTokens: usage.cache_read_input_tokens })
                }
              })
        })
        turn.queue.end(Exit.void)
      } else if (turn.interrupting || result.terminal_reason === "aborted_streaming") {
        turn.queue.offer({ _tag: "TurnInterrupted", turnRef: turn.uuid })
        turn.queue.end(Exit.void)
      } else {
        const why = [...(result.errors ?? []), ...(result.result ? [result.result] : [])].join("; ") || result.subtype
        offer(turn, { type: "error", message: clip(why, 4000), code: result.subtype })
        turn.queue.end(
          Exit.fail(failure("error", `Claude Code ended the turn with ${result.subtype}: ${clip(why, 1000)}`))
        )
      }
    }

    const onPermission = (
      cp: ClaudeProcess,
      requestId: string,
      toolName: string,
      input: unknown,
      description?: string
    ): void => {
      const question = permissionQuestion(toolName, input, description)
      const turn = cp.turn
      const route = routeApproval(policy, turn !== null)
      if (route !== "open" || turn === null) {
        const taken = route === "open" ? "decline" : route
        if (turn !== null) {
          offer(turn, { type: "approval_request", approvalId: makeId.approval(), question, status: taken })
        }
        return cp.proc.later(cp.proc.send(controlSuccess(requestId, answerOf(taken, input))).pipe(Effect.ignore))
      }
      const approvalId = cp.approvals.open(cp.sessionId, { requestId, input })
      offer(turn, { type: "approval_request", approvalId, question, status: "open" })
    }

    const onLine = (cp: ClaudeProcess, raw: unknown): void => {
      if (typeof raw !== "object" || raw === null) return
      const type = (raw as { type?: unknown }).type
      const subtype = (raw as { subtype?: unknown }).subtype
      if (typeof type !== "string" || !knownLineTypes.has(type)) return
      if (type === "system" && subtype !== "task_notification") return
      const decoded = decodeLine(raw)
      if (Either.isLeft(decoded)) {
        return cp.proc.later(
          Effect.logWarning(`${provider}: skipping a ${type} line that does not decode`, decoded.left.message)
        )
      }
      const line = decoded.right
      const turn = cp.turn
      switch (line.type) {
        case "control_response": {
          const waiting = cp.control.get(line.response.request_id)
          if (waiting === undefined) return
          cp.control.delete(line.response.request_id)
          Deferred.unsafeDone(
            waiting,
            line.response.subtype === "success"
              ? Exit.void
              : Exit.fail(
                  failure("error", `Claude Code refused a control request: ${line.response.error ?? "no reason given"}`)
                )
          )
          return
        }
        case "control_request":
          if ("tool_name" in line.request) {
            const request = line.request as { tool_name: string; input: unknown; description?: string }
            return onPermission(cp, line.request_id, request.tool_name, request.input, request.description)
          }
          return cp.proc.later(
            cp.proc
              .send(controlError(line.request_id, `Skein does not handle ${line.request.subtype}`))
              .pipe(Effect.ignore)
          )
        case "assistant": {
          if (turn === null || (line.parent_tool_use_id ?? null) !== null) return
          if (line.uuid !== undefined) turn.last = line.uuid
          for (const block of line.message.content) {
            if (block.type === "text" && "text" in block && block.text.length > 0) {
              offer(turn, { type: "assistant_message", text: block.text })
            } else if (block.type === "thinking" && "thinking" in block && block.thinking.length > 0) {
              offer(turn, { type: "reasoning", text: block.thinking })
            } else if (block.type === "tool_use" && "id" in block && "name" in block) {
              const use = { name: block.name, input: block.input }
              turn.toolUses.set(block.id, use)
              if (SUBAGENT_TOOLS.has(block.name)) offer(turn, childStarted(block.id, use))
            }
          }
          return
        }
        case "user": {
          if (turn === null || (line.parent_tool_use_id ?? null) !== null) return
          if (line.uuid !== undefined) turn.last = line.uuid
          if (typeof line.message.content === "string") return
          for (const block of line.message.content) {
            if (block.type !== "tool_result" || !("tool_use_id" in block)) continue
            const use = turn.toolUses.get(block.tool_use_id)
            const text = resultText(block.content)
            const isError = block.is_error === true
            if (use !== undefined && SUBAGENT_TOOLS.has(use.name)) {
              if (!turn.childrenDone.has(block.tool_use_id)) {
                turn.childrenDone.add(block.tool_use_id)
                offer(turn, childEnded(block.tool_use_id, use, { ok: !isError, result: text, nativeThreadRef: null }))
              }
            } else if (use !== undefined) {
              offer(turn, toolItem(use, text, isError))
            }
          }
          return
        }
        case "system": {
          if (turn === null || line.tool_use_id === undefined || turn.childrenDone.has(line.tool_use_id)) return
          turn.childrenDone.add(line.tool_use_id)
          offer(
            turn,
            childEnded(line.tool_use_id, turn.toolUses.get(line.tool_use_id), {
              ok: line.status === "completed",
              result: line.summary ?? line.status,
              nativeThreadRef: line.task_id ?? null
            })
          )
          return
        }
        case "result":
          return endTurn(cp, line)
      }
    }

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

    const strong = (nativeRef: string): NativeThreadHandle => ({ nativeRef, strength: "strong" })

    const transcript = (sessionId: string) => transcriptPath(configDir, cwd, sessionId)

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

    return {
      pid: null,
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
        }),
      runTurn,
      interrupt,
      respondApproval,
      summarise: () => Effect.fail(failure("unsupported", "the Claude driver does not write handoff summaries")),
      exited: Deferred.await(exited)
    } satisfies ProviderSessionHandle
  })

/** Claude Code's answer to a permission request for a decision. */
const answerOf = (decision: ApprovalDecision, input: unknown) =>
  decision === "accept"
    ? ({ behavior: "allow", updatedInput: input } as const)
    : decision === "decline"
      ? ({ behavior: "deny", message: "The user declined this action." } as const)
      : ({ behavior: "deny", message: "The user cancelled this turn.", interrupt: true } as const)
