/**
 * One `claude -p` process serving one Claude session: started with the session's launch
 * plan (ClaudeLaunches), ready once it has answered the `initialize` control request.
 * A process that ends before it is ready becomes a typed failure (a session in use, a
 * conversation not found, a start that failed); one that ends later fails its turn and
 * its pending control requests as a crash.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Deferred, Duration, Effect, ExecutionStrategy, Exit, Scope } from "effect"
import type { ProviderFailure } from "@skein/domain"
import { clip } from "../agents/AgentCommon.js"
import type { Failure } from "../agents/AgentOptions.js"
import { makeWaitingApprovals } from "../agents/Approvals.js"
import type { LocatedBinary } from "../binary/AgentBinary.js"
import { LineProcess as Lines } from "../process/LineProcess.js"
import type { ClaudeAdapterOptions } from "./ClaudeAdapter.js"
import type { ClaudeProcess, Shared } from "./ClaudeEvents.js"
import { launchArgs } from "./ClaudeLaunches.js"
import { controlRequest } from "./ClaudeProtocol.js"

const INITIALIZE_TIMEOUT_MS = 60_000

/** What starting a session's process needs. */
export interface ClaudeProcessContext {
  readonly options: ClaudeAdapterOptions
  readonly env: Record<string, string>
  readonly binary: LocatedBinary
  readonly cwd: string
  readonly shared: Shared
  readonly failure: Failure
  /** Decodes one line of a process (ClaudeEvents). */
  readonly onLine: (cp: ClaudeProcess, raw: unknown) => void
  /** The transcript of a session on disk, if Claude Code wrote one. */
  readonly transcript: (sessionId: string) => string | null
  /** Called once a ready process has ended by itself (not by its scope): the pool forgets it. */
  readonly onGone: (cp: ClaudeProcess) => Effect.Effect<void>
}

/** Sends a control request to `cp` and waits for its answer, at most `timeoutMs`. */
export const control = (
  failure: Failure,
  cp: ClaudeProcess,
  subtype: "initialize" | "interrupt",
  timeoutMs: number
): Effect.Effect<void, ProviderFailure> =>
  Effect.gen(function* () {
    const requestId = `skein-${++cp.controlSent}`
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
const refusal = (failure: Failure, sessionId: string, how: string): ProviderFailure =>
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

/** The command line of a session's process: streaming JSON both ways, permissions asked on stdio. */
const argsOf = (context: ClaudeProcessContext, sessionId: string): Array<string> => {
  const { options, shared, binary } = context
  const model = shared.models.get(sessionId) ?? options.model ?? null
  return [
    ...binary.leadingArgs,
    "-p",
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
    // Skein's own messages echoed as Claude Code takes them in: how a steer is seen to land.
    "--replay-user-messages",
    "--permission-prompt-tool",
    "stdio",
    ...(options.permissionMode === undefined ? [] : ["--permission-mode", options.permissionMode]),
    ...(model === null ? [] : ["--model", model]),
    ...toolArgs(context, sessionId),
    ...launchArgs(sessionId, shared.launches.get(sessionId))
  ]
}

/** Skein's tools that run without asking (none of them changes anything but Skein's own threads). */
const UNASKED_TOOLS = ["spawn_subagent", "subagent_status", "await_subagents", "list_providers"]

/**
 * Skein's tools as the session's only MCP server, loaded up front (not behind tool
 * search), its credential in a private file rather than on the command line.
 */
const toolArgs = (context: ClaudeProcessContext, sessionId: string): Array<string> => {
  const tools = context.shared.tools.get(sessionId)
  if (tools === undefined) return []
  const file = Path.join(context.options.stateDir, `mcp-${sessionId}.json`)
  Fs.mkdirSync(context.options.stateDir, { recursive: true })
  const config = {
    mcpServers: {
      skein: { type: "http", url: tools.url, headers: { Authorization: `Bearer ${tools.token}` }, alwaysLoad: true }
    }
  }
  Fs.writeFileSync(file, JSON.stringify(config), { mode: 0o600 })
  Fs.chmodSync(file, 0o600)
  return [
    "--mcp-config",
    file,
    "--strict-mcp-config",
    "--allowedTools",
    UNASKED_TOOLS.map((name) => `mcp__skein__${name}`).join(",")
  ]
}

/**
 * What follows a process's end by itself: a new session or a fork that was sent a
 * message exists on disk now (Claude Code writes the message first), so it resumes like
 * any other (starting it "new" again would be refused as already in use); its pending
 * control requests and its turn fail as a crash.
 */
const afterExit = (context: ClaudeProcessContext, cp: ClaudeProcess, how: string): void => {
  const { shared, failure } = context
  const planned = shared.launches.get(cp.sessionId)
  if (cp.sent && planned !== undefined && planned.kind !== "rewind" && context.transcript(cp.sessionId) !== null) {
    shared.launches.clear(cp.sessionId)
  }
  const gone = failure("crash", `the claude process of session ${cp.sessionId} ${how}`)
  for (const waiting of cp.control.values()) Deferred.unsafeDone(waiting, Exit.fail(gone))
  cp.control.clear()
  const turn = cp.turn
  cp.turn = null
  turn?.queue.end(Exit.fail(gone))
}

/**
 * Starts the process of `sessionId` in a scope of its own under the caller's, and waits
 * until it is ready. Closing `cp.scope` (or the caller's scope) stops it.
 */
export const startProcess = (
  context: ClaudeProcessContext,
  sessionId: string
): Effect.Effect<ClaudeProcess, ProviderFailure, Scope.Scope> =>
  Effect.gen(function* () {
    const { failure } = context
    const scope = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
    return yield* Effect.gen(function* () {
      const proc = yield* Lines.spawn({
        command: context.binary.path,
        args: argsOf(context, sessionId),
        env: context.env,
        cwd: context.cwd,
        graceMs: context.options.graceMs,
        provider: context.options.name
      }).pipe(Scope.extend(scope))
      const cp: ClaudeProcess = {
        sessionId,
        proc,
        scope,
        control: new Map(),
        approvals: makeWaitingApprovals(),
        turn: null,
        sent: false,
        controlSent: 0
      }
      // The reader: when stdout ends, the process is gone.
      yield* proc
        .readMessages((raw) => context.onLine(cp, raw))
        .pipe(
          Effect.zipRight(proc.exited),
          Effect.zipRight(proc.describeExit),
          Effect.flatMap((how) => Effect.sync(() => afterExit(context, cp, how))),
          Effect.zipRight(context.onGone(cp)),
          Effect.forkIn(scope)
        )
      const ended = Effect.flatMap(proc.exited, () =>
        Effect.flatMap(proc.describeExit, (how) => Effect.fail(refusal(failure, sessionId, how)))
      )
      yield* Effect.raceFirst(control(failure, cp, "initialize", INITIALIZE_TIMEOUT_MS), ended)
      return cp
    }).pipe(Effect.onError(() => Scope.close(scope, Exit.void)))
  })
