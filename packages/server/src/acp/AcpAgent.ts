/**
 * Skein as an ACP agent (`skein acp`): an editor's session is an app thread, each
 * prompt a run on the session's current provider, which the editor picks through the
 * session config option `provider` (a switch between prompts is a provider switch, with
 * its handoff). The run's items stream back as `session/update`s (AcpUpdates.ts); an
 * approval the agent asks for becomes `session/request_permission`, answered through
 * `approval.respond`; `session/cancel` interrupts the run; `session/load` replays a
 * thread's history; `session/list` lists the threads; the unstable `session/fork` is
 * `thread.fork` (the SDK's unstable entrypoint, for that method only). A refusal is a JSON-RPC error
 * whose `data` is Skein's typed error.
 */
import * as acp from "@agentclientprotocol/sdk/unstable"
import type { ProviderName, Run, StoredEvent, ThreadId, TurnItem } from "@skein/domain"
import { Cause, Deferred, Effect, Exit, Option } from "effect"
import type { AcpBackend } from "./AcpBackend.js"
import { availableCommands, commandOf, runCommand } from "./AcpCommands.js"
import { promptText, stopReasonOf, updateOf } from "./AcpUpdates.js"

export interface AcpAgentDeps {
  /** The embedded runtime's Orchestrator, or a daemon's client (AcpBackend.ts). */
  readonly backend: AcpBackend
  /** Runs an effect of the embedding runtime to its exit. */
  readonly run: <A, E>(effect: Effect.Effect<A, E>) => Promise<Exit.Exit<A, E>>
  readonly version: string
}

const codeOf = (tag: string): number =>
  tag === "InvalidInput" || tag === "ProviderNotFound" || tag === "InvalidWorkspace"
    ? -32602
    : tag === "ThreadNotFound" || tag === "RunNotFound"
      ? -32002
      : -32603

/** A failure as the JSON-RPC error the SDK sends: Skein's typed error in `data`. */
const requestError = (cause: Cause.Cause<unknown>): acp.RequestError => {
  const thrown = Option.getOrUndefined(Cause.dieOption(cause))
  if (thrown instanceof acp.RequestError) return thrown
  const failure = Option.getOrUndefined(Cause.failureOption(cause)) as
    { readonly _tag?: string; readonly message?: string } | undefined
  if (failure?._tag !== undefined) {
    return new acp.RequestError(codeOf(failure._tag), failure.message ?? failure._tag, {
      _tag: failure._tag,
      message: failure.message
    })
  }
  return new acp.RequestError(-32603, Cause.pretty(cause).split("\n")[0] ?? "internal error")
}

export const makeAcpAgent = (deps: AcpAgentDeps): acp.AgentApp => {
  const orchestrator = deps.backend
  /** Session (the thread's id) → the provider its next prompt goes to. */
  const providers = new Map<string, string>()

  const call = async <A>(effect: Effect.Effect<A, unknown>): Promise<A> => {
    const exit = await deps.run(effect)
    if (Exit.isSuccess(exit)) return exit.value
    throw requestError(exit.cause)
  }

  const instances = () => call(Effect.map(orchestrator.listProviders, (list) => list.map((p) => p.name)))

  const configOptions = async (sessionId: string): Promise<Array<acp.SessionConfigOption>> => {
    const names = await instances()
    return [
      {
        id: "provider",
        name: "Provider",
        description: "The agent the next prompt goes to; switching hands it what it missed.",
        type: "select",
        currentValue: providers.get(sessionId) ?? names[0] ?? "",
        options: names.map((name) => ({ value: name, name }))
      }
    ]
  }

  /** Opens a session on this connection: its provider, and (once answered) the commands it offers. */
  const open = async (context: acp.AgentContext, sessionId: string, provider: string | undefined) => {
    const [first] = await instances()
    providers.set(sessionId, providers.get(sessionId) ?? provider ?? first ?? "")
    // After the answer that names the session.
    setImmediate(() => {
      const update = { sessionUpdate: "available_commands_update" as const, availableCommands }
      void context.notify(acp.methods.client.session.update, { sessionId, update }).catch(() => undefined)
    })
    return { configOptions: await configOptions(sessionId) }
  }

  /** `/provider NAME`, and the config option: a configured instance, or ProviderNotFound. */
  const setProvider = async (sessionId: string, value: string) => {
    const names = await instances()
    if (!names.includes(value)) {
      throw new acp.RequestError(-32602, `No provider instance "${value}"; configured: ${names.join(", ")}`, {
        _tag: "ProviderNotFound",
        message: `No provider instance "${value}"`
      })
    }
    providers.set(sessionId, value)
  }

  /** The session's thread, known to this connection (new or loaded), or a typed refusal. */
  const sessionOf = (sessionId: string) => {
    const provider = providers.get(sessionId)
    if (provider === undefined) {
      throw new acp.RequestError(-32002, `Session ${sessionId} is not open here: call session/load first`, {
        _tag: "ThreadNotFound",
        message: `Session ${sessionId} is not open here`
      })
    }
    return { threadId: sessionId as ThreadId, provider: provider as ProviderName }
  }

  /** Session → the newest event of its thread a prompt has read: the next one reads from there. */
  const seen = new Map<string, number>()

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
    return Effect.scoped(
      Effect.gen(function* () {
        const ended = yield* Deferred.make<Run>()
        yield* orchestrator.follow(threadId, seen.get(sessionId) ?? 0, (events: ReadonlyArray<StoredEvent>) => {
          for (const { event, threadSequence } of events) {
            if (threadSequence > (seen.get(sessionId) ?? 0)) seen.set(sessionId, threadSequence)
            if (event._tag === "TurnItemRecorded" && event.item.runId === runId) show(event.item)
            if (event._tag === "RunEnded" && event.run.id === runId) Deferred.unsafeDone(ended, Exit.succeed(event.run))
          }
        })
        const run = yield* Deferred.await(ended)
        yield* Effect.promise(() => Promise.allSettled(answers))
        return run
      })
    )
  }

  const askPermission = async (
    context: acp.AgentContext,
    sessionId: string,
    threadId: ThreadId,
    item: Extract<TurnItem, { readonly type: "approval_request" }>
  ) => {
    const answer = await context.request(acp.methods.client.session.requestPermission, {
      sessionId,
      toolCall: { toolCallId: item.id, title: item.question, status: "pending" },
      options: [
        { optionId: "accept", name: "Allow", kind: "allow_once" },
        { optionId: "decline", name: "Decline", kind: "reject_once" }
      ]
    })
    const decision =
      answer.outcome.outcome === "selected" && answer.outcome.optionId === "accept"
        ? "accept"
        : answer.outcome.outcome === "selected"
          ? "decline"
          : "cancel"
    await deps.run(orchestrator.respondApproval({ threadId, approvalId: item.approvalId, decision }))
  }

  return acp
    .agent({ name: "skein" })
    .onRequest(acp.methods.agent.initialize, () => ({
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: {
        loadSession: true,
        promptCapabilities: { image: false, audio: false, embeddedContext: false },
        sessionCapabilities: { list: {}, resume: {}, close: {}, fork: {} }
      },
      agentInfo: { name: "skein", title: "Skein", version: deps.version },
      authMethods: []
    }))
    .onRequest(acp.methods.agent.session.new, async ({ client, params }) => {
      const thread = await call(orchestrator.createThread({ workspace: params.cwd }))
      return { sessionId: thread.id, ...(await open(client, thread.id, undefined)) }
    })
    .onRequest(acp.methods.agent.session.resume, async ({ client, params }) => {
      const view = await call(
        orchestrator.getThread(params.sessionId as ThreadId, { runs: { limit: 1 }, items: false })
      )
      return open(client, params.sessionId, view.runs.at(-1)?.provider)
    })
    .onRequest(acp.methods.agent.session.fork, async ({ client, params }) => {
      // thread.fork at the thread's latest stable run; the fork's first prompt resolves its context.
      const { thread } = await call(
        orchestrator.forkThread({ sourceThreadId: params.sessionId as ThreadId, sourcePoint: "latest_stable" })
      )
      return { sessionId: thread.id, ...(await open(client, thread.id, providers.get(params.sessionId))) }
    })
    .onRequest(acp.methods.agent.session.close, async ({ params }) => {
      if (providers.delete(params.sessionId)) {
        // Its run, if one is going, stops with it.
        await deps.run(orchestrator.interruptRun({ threadId: params.sessionId as ThreadId }))
      }
      return {}
    })
    .onRequest(acp.methods.agent.session.load, async ({ client, params }) => {
      const view = await call(orchestrator.getThread(params.sessionId as ThreadId))
      // The history, as the editor would have seen it: each run's message, then what it did.
      for (const run of view.runs) {
        const update = {
          sessionUpdate: "user_message_chunk" as const,
          content: { type: "text" as const, text: run.message }
        }
        await client.notify(acp.methods.client.session.update, { sessionId: params.sessionId, update })
        for (const item of run.items) {
          const shown = updateOf(item, false)
          if (shown !== null)
            await client.notify(acp.methods.client.session.update, { sessionId: params.sessionId, update: shown })
        }
      }
      return open(client, params.sessionId, view.runs.at(-1)?.provider)
    })
    .onRequest(acp.methods.agent.session.list, async ({ params }) => {
      const threads = await call(orchestrator.listThreads({}))
      return {
        sessions: threads
          .filter((t) => t.workspace !== null && (params.cwd == null || t.workspace === params.cwd))
          .map((t) => ({ sessionId: t.id, cwd: t.workspace!, title: t.title, updatedAt: t.updatedAt }))
      }
    })
    .onRequest(acp.methods.agent.session.setConfigOption, async ({ params }) => {
      sessionOf(params.sessionId)
      if (params.configId !== "provider" || typeof params.value !== "string") {
        throw new acp.RequestError(-32602, `Skein has one session option, "provider", a name`, {
          _tag: "InvalidInput",
          message: `unknown config option ${params.configId}`
        })
      }
      await setProvider(params.sessionId, params.value)
      return { configOptions: await configOptions(params.sessionId) }
    })
    .onRequest(acp.methods.agent.session.prompt, async ({ client, params }) => {
      const { provider, threadId } = sessionOf(params.sessionId)
      const message = promptText(params.prompt)
      const command = commandOf(message)
      if (command !== undefined) {
        const said = await call(
          runCommand(orchestrator, threadId, command, (name) =>
            Effect.promise(() => setProvider(params.sessionId, name))
          )
        )
        const update = { sessionUpdate: "agent_message_chunk" as const, content: { type: "text" as const, text: said } }
        await client.notify(acp.methods.client.session.update, { sessionId: params.sessionId, update })
        return { stopReason: "end_turn" }
      }
      const started = await call(orchestrator.startRun({ threadId, provider, message }))
      const exit = await deps.run(follow(client, params.sessionId, threadId, started.id))
      if (Exit.isFailure(exit)) throw requestError(exit.cause)
      const run = exit.value
      if (run.status === "failed" && run.failure !== null) {
        const update = {
          sessionUpdate: "agent_message_chunk" as const,
          content: { type: "text" as const, text: `The run failed (${run.failure.reason}): ${run.failure.message}` }
        }
        await client.notify(acp.methods.client.session.update, { sessionId: params.sessionId, update })
      }
      return { stopReason: stopReasonOf(run) }
    })
    .onNotification(acp.methods.agent.session.cancel, async ({ params }) => {
      if (!providers.has(params.sessionId)) return
      await deps.run(orchestrator.interruptRun({ threadId: params.sessionId as ThreadId }))
    })
}
