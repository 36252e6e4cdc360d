/**
 * An ACP driver session (the port's ProviderSessionHandle): one agent process per
 * instance and workspace, spoken to through a JSON-RPC peer (`"jsonrpc": "2.0"` on every
 * message), its messages decoded by AcpEvents, the port's operations in AcpThreads and
 * AcpTurns. See AcpAdapter for what the driver does.
 */
import type { ProviderFailure, ProviderSessionHandle } from "@skein/domain"
import { Effect, Either, Schema } from "effect"
import type { Scope } from "effect"
import * as Fs from "node:fs"
import { clip } from "../agents/AgentCommon.js"
import type { Failure } from "../agents/AgentOptions.js"
import { failureOf } from "../agents/AgentOptions.js"
import { makeWaitingApprovals } from "../agents/Approvals.js"
import * as JsonRpcPeer from "../agents/JsonRpcPeer.js"
import { makeTurnSlots } from "../agents/TurnSlot.js"
import type { LineProcess } from "../process/LineProcess.js"
import { LineProcess as Lines } from "../process/LineProcess.js"
import type { AcpAdapterOptions } from "./AcpAdapter.js"
import type { ActiveTurn, WaitingPermission } from "./AcpEvents.js"
import { makeAcpEvents } from "./AcpEvents.js"
import type { InitializeResult } from "./AcpProtocol.js"
import { InitializeResult as InitializeSchema, PROTOCOL_VERSION } from "./AcpProtocol.js"
import { acpThreads } from "./AcpThreads.js"
import { acpTurns } from "./AcpTurns.js"

const INITIALIZE_TIMEOUT_MS = 30_000

/** A request to the agent with its result decoded. */
export type Call = <A, I>(
  method: string,
  params: unknown,
  schema: Schema.Schema<A, I>
) => Effect.Effect<A, ProviderFailure>

/** A started agent process: its peer, its handshake's answer, and the decoding of its messages. */
interface Connection {
  readonly proc: LineProcess
  readonly peer: JsonRpcPeer.JsonRpcPeer
  readonly call: Call
  readonly agent: InitializeResult
}

/**
 * Starts the agent in `cwd` and shakes hands (`initialize`: Skein as a client that reads
 * and writes text files and offers no terminal). `wire` sees the peer before any message
 * is read. Closing the scope stops the process.
 */
export const connect = (
  options: AcpAdapterOptions,
  env: Record<string, string>,
  cwd: string,
  wire: (
    peer: () => JsonRpcPeer.JsonRpcPeer,
    proc: LineProcess
  ) => Pick<JsonRpcPeer.JsonRpcPeerOptions, "onNotification" | "onRequest"> & {
    readonly onEnd: (reason: JsonRpcPeer.FailAll) => void
  }
): Effect.Effect<Connection, ProviderFailure, Scope.Scope> =>
  Effect.gen(function* () {
    const provider = options.name
    const failure = failureOf(provider)
    const [command, ...args] = options.command
    const proc = yield* Lines.spawn({ command: command!, args, env, cwd, graceMs: options.graceMs, provider })
    const handlers = wire(() => peer, proc)
    const peer: JsonRpcPeer.JsonRpcPeer = JsonRpcPeer.make({
      provider,
      send: proc.send,
      versioned: true,
      onNotification: handlers.onNotification,
      onRequest: handlers.onRequest,
      warn: (message, detail) =>
        proc.later(detail === undefined ? Effect.logWarning(message) : Effect.logWarning(message, detail))
    })
    const end = (reason: JsonRpcPeer.FailAll) => {
      peer.failAll(reason)
      handlers.onEnd(reason)
    }
    yield* Effect.addFinalizer(() => Effect.sync(() => end(() => failure("error", "the ACP session was closed"))))
    yield* JsonRpcPeer.serve(peer, proc, (how) =>
      Effect.sync(() => end((what) => failure("crash", `the ACP agent ${options.command[0]} ${how} (during ${what})`)))
    )
    const call: Call = (method, params, schema) =>
      Effect.flatMap(peer.call(method, params), (raw) => {
        const decoded = Schema.decodeUnknownEither(schema)(raw)
        return Either.isRight(decoded)
          ? Effect.succeed(decoded.right)
          : Effect.fail(failure("error", `unexpected reply to ${method}: ${decoded.left.message}`))
      })
    const agent = yield* initialize(call, proc, failure, options.command[0]!)
    return { proc, peer, call, agent }
  })

/** The handshake; a failure says why the agent did not start, with its stderr. */
const initialize = (call: Call, proc: LineProcess, failure: Failure, command: string) =>
  call(
    "initialize",
    {
      protocolVersion: PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false },
      clientInfo: { name: "skein", title: "Skein", version: "0.1.0" }
    },
    InitializeSchema
  ).pipe(
    Effect.filterOrFail(
      (agent) => agent.protocolVersion === PROTOCOL_VERSION,
      (agent) =>
        failure(
          "error",
          `the agent speaks ACP version ${agent.protocolVersion}; Skein speaks version ${PROTOCOL_VERSION}`
        )
    ),
    Effect.timeoutFail({
      duration: INITIALIZE_TIMEOUT_MS,
      onTimeout: () => failure("timeout", `${command} did not answer initialize in ${INITIALIZE_TIMEOUT_MS} ms`)
    }),
    // A crash's detail tells its stderr already.
    Effect.catchTag("ProviderFailure", (error) =>
      Effect.flatMap(error.kind === "crash" ? Effect.succeed("") : proc.stderrTail, (tail) =>
        Effect.fail(
          failure(
            error.kind === "timeout" ? "timeout" : "spawn",
            `the ACP agent ${command} did not start: ${error.detail}${tail.trim() ? `; stderr: ${clip(tail.trim(), 800)}` : ""}`
          )
        )
      )
    )
  )

export const openSession = (
  options: AcpAdapterOptions,
  env: Record<string, string>,
  workspace: string | null,
  /** Hears what the agent answered to this session's `initialize`. */
  said: (agent: InitializeResult) => Effect.Effect<void>
): Effect.Effect<ProviderSessionHandle, ProviderFailure, Scope.Scope> =>
  Effect.gen(function* () {
    const provider = options.name
    const failure = failureOf(provider)
    const cwd = workspace ?? options.stateDir
    yield* Effect.sync(() => Fs.mkdirSync(cwd, { recursive: true }))
    const scope = yield* Effect.scope

    const turns = makeTurnSlots<ActiveTurn>()
    const approvals = makeWaitingApprovals<WaitingPermission>()
    const sessions = new Set<string>()
    let events: ReturnType<typeof makeAcpEvents> | undefined

    const { proc, peer, call, agent } = yield* connect(options, env, cwd, (peerOf, proc) => {
      events = makeAcpEvents({
        provider,
        policy: options.approvals ?? "ask",
        workspace: cwd,
        turns,
        approvals,
        sessions,
        peer: peerOf,
        later: proc.later
      })
      return {
        onNotification: events.onNotification,
        onRequest: events.onRequest,
        onEnd: (reason) => {
          for (const [sessionId, turn] of turns.drain()) {
            events!.endTurn(turn, Either.left(reason(`a prompt on session ${sessionId}`)))
          }
          approvals.clear()
        }
      }
    })
    yield* said(agent)
    const threads = acpThreads({ options, agent: agent.agentCapabilities ?? {}, cwd, call, sessions, failure })
    return {
      pid: proc.pid,
      ...threads,
      ...acpTurns({ turns, approvals, peer, endTurn: events!.endTurn, failure, scope }),
      summarise: () => Effect.fail(failure("unsupported", "the ACP driver does not write handoff summaries")),
      exited: proc.exited
    } satisfies ProviderSessionHandle
  })

/** What the agent answers to `initialize`, from a process started and stopped for the purpose. */
export const probeAgent = (
  options: AcpAdapterOptions,
  env: Record<string, string>
): Effect.Effect<InitializeResult, ProviderFailure> =>
  Effect.scoped(
    Effect.gen(function* () {
      yield* Effect.sync(() => Fs.mkdirSync(options.stateDir, { recursive: true }))
      const { agent } = yield* connect(options, env, options.stateDir, (peer, proc) => ({
        onNotification: () => {},
        onRequest: (id) =>
          proc.later(Effect.ignore(peer().respond(id, { error: { code: -32601, message: "Skein is only probing" } }))),
        onEnd: () => {}
      }))
      return agent
    })
  )
