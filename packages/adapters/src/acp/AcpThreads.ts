/**
 * The thread operations of an ACP driver session: a native thread is an ACP session.
 * Start is `session/new`; resume is `session/resume` (or `session/load`, whose replayed
 * history the driver ignores) when the agent advertises one; fork is `session/fork` of
 * the whole session (fork `latest`); ACP has no rollback. Skein's tools go to each
 * session as an HTTP MCP server when the agent takes one; the instance's `configOptions`
 * and the model are set on each session with `session/set_config_option`.
 */
import type { NativeThreadHandle, NativeThreadOptions, ProviderFailure, ProviderSessionHandle } from "@skein/domain"
import { Effect, Schema } from "effect"
import type { Failure } from "../agents/AgentOptions.js"
import type { AcpAdapterOptions } from "./AcpAdapter.js"
import type { AgentCapabilities } from "./AcpProtocol.js"
import { SessionResult, toolsServer } from "./AcpProtocol.js"
import type { Call } from "./AcpSession.js"

const Anything = Schema.Unknown

/** How an agent takes an earlier session back, if it can. */
export const resumeMethodOf = (agent: AgentCapabilities): "session/resume" | "session/load" | null =>
  agent.sessionCapabilities?.resume != null ? "session/resume" : agent.loadSession === true ? "session/load" : null

export const acpThreads = (session: {
  readonly options: AcpAdapterOptions
  readonly agent: AgentCapabilities
  readonly cwd: string
  readonly call: Call
  /** The sessions this process holds (created, resumed or forked here). */
  readonly sessions: Set<string>
  readonly failure: Failure
}): Pick<ProviderSessionHandle, "startThread" | "resumeThread" | "forkThread" | "rollbackThread"> => {
  const { options, agent, cwd, call, sessions, failure } = session
  const resumeMethod = resumeMethodOf(agent)
  const strength = resumeMethod === null ? "weak" : "strong"

  const mcpServers = (thread?: NativeThreadOptions) =>
    thread?.tools !== undefined && agent.mcpCapabilities?.http === true ? [toolsServer(thread.tools)] : []

  /** The instance's config options and the model, set on a session it holds. */
  const configure = (sessionId: string, model: string | null) =>
    Effect.forEach(
      Object.entries({ ...options.configOptions, ...(model === null ? {} : { model }) }),
      ([configId, value]) => call("session/set_config_option", { sessionId, configId, value }, Anything),
      { discard: true }
    )

  const held = (sessionId: string, model: string | null): Effect.Effect<NativeThreadHandle, ProviderFailure> =>
    Effect.as(
      Effect.zipRight(
        Effect.sync(() => sessions.add(sessionId)),
        configure(sessionId, model)
      ),
      { nativeRef: sessionId, strength }
    )

  const resume = (sessionId: string, thread?: NativeThreadOptions): Effect.Effect<void, ProviderFailure> => {
    if (sessions.has(sessionId)) return Effect.void
    if (resumeMethod === null) {
      return Effect.fail(failure("resume_failed", "the agent cannot take an earlier session back (no resume, no load)"))
    }
    return call(resumeMethod, { sessionId, cwd, mcpServers: mcpServers(thread) }, Anything).pipe(
      Effect.mapError((error) => failure("resume_failed", `${resumeMethod} ${sessionId}: ${error.detail}`)),
      Effect.zipRight(held(sessionId, options.model ?? null)),
      Effect.asVoid
    )
  }

  return {
    startThread: ({ model, tools }) =>
      call("session/new", { cwd, mcpServers: mcpServers({ tools }) }, SessionResult).pipe(
        Effect.flatMap((result) => held(result.sessionId, model ?? options.model ?? null))
      ),
    resumeThread: resume,
    forkThread: (sessionId, _atTurnRef, thread) =>
      Effect.gen(function* () {
        if (agent.sessionCapabilities?.fork == null) {
          return yield* failure("unsupported", "the agent does not fork sessions (no session/fork)")
        }
        if (resumeMethod !== null) yield* resume(sessionId, thread)
        const forked = yield* call("session/fork", { sessionId, cwd, mcpServers: mcpServers(thread) }, SessionResult)
        return yield* held(forked.sessionId, options.model ?? null)
      }),
    rollbackThread: () => Effect.fail(failure("unsupported", "ACP has no rollback: Skein continues in a new session"))
  }
}
