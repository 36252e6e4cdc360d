/**
 * Skein as an ACP agent (`skein acp`): an editor's session is an app thread, each
 * prompt a run on the session's current provider (AcpPrompts.ts), which the editor picks
 * through the session config option `provider` (a switch between prompts is a provider
 * switch, with its handoff). `session/cancel` interrupts the run; `session/load` replays
 * a thread's history; `session/resume` opens it without; `session/close` forgets it;
 * `session/list` lists the threads; the unstable `session/fork` is `thread.fork` (hence
 * the SDK's unstable entrypoint). A refusal is a JSON-RPC error whose `data` is Skein's
 * typed error (AcpSessions.ts).
 */
import * as acp from "@agentclientprotocol/sdk/unstable"
import type { ThreadId } from "@skein/domain"
import type { AcpBackend } from "./AcpBackend.js"
import { makeAcpPrompts } from "./AcpPrompts.js"
import type { AcpRun } from "./AcpSessions.js"
import { makeAcpSessions } from "./AcpSessions.js"
import { updateOf } from "./AcpUpdates.js"

export interface AcpAgentDeps {
  /** The embedded runtime's Orchestrator, or a daemon's client (AcpBackend.ts). */
  readonly backend: AcpBackend
  readonly run: AcpRun
  readonly version: string
}

export const makeAcpAgent = ({ backend, run, version }: AcpAgentDeps): acp.AgentApp => {
  const sessions = makeAcpSessions(backend, run)
  const { call, open } = sessions
  const prompt = makeAcpPrompts(backend, sessions, run)

  /** The thread's history as the editor would have seen it: each run's message, then what it did. */
  const replay = async (context: acp.AgentContext, sessionId: string, threadId: ThreadId) => {
    const view = await call(backend.getThread(threadId))
    const send = (update: acp.SessionUpdate) => context.notify(acp.methods.client.session.update, { sessionId, update })
    for (const ran of view.runs) {
      await send({ sessionUpdate: "user_message_chunk", content: { type: "text", text: ran.message } })
      for (const item of ran.items) {
        const shown = updateOf(item, false)
        if (shown !== null) await send(shown)
      }
    }
    return view.runs.at(-1)?.provider
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
      agentInfo: { name: "skein", title: "Skein", version },
      authMethods: []
    }))
    .onRequest(acp.methods.agent.session.new, async ({ client, params }) => {
      const thread = await call(backend.createThread({ workspace: params.cwd }))
      return { sessionId: thread.id, ...(await open(client, thread.id, undefined)) }
    })
    .onRequest(acp.methods.agent.session.load, async ({ client, params }) =>
      open(client, params.sessionId, await replay(client, params.sessionId, params.sessionId as ThreadId))
    )
    .onRequest(acp.methods.agent.session.resume, async ({ client, params }) => {
      const view = await call(backend.getThread(params.sessionId as ThreadId, { runs: { limit: 1 }, items: false }))
      return open(client, params.sessionId, view.runs.at(-1)?.provider)
    })
    .onRequest(acp.methods.agent.session.fork, async ({ client, params }) => {
      // thread.fork at the thread's latest stable run; the fork's first prompt resolves its context.
      const { thread } = await call(
        backend.forkThread({ sourceThreadId: params.sessionId as ThreadId, sourcePoint: "latest_stable" })
      )
      return { sessionId: thread.id, ...(await open(client, thread.id, sessions.providerOf(params.sessionId))) }
    })
    .onRequest(acp.methods.agent.session.close, async ({ params }) => {
      // Its run, if one is going, stops with it.
      if (sessions.close(params.sessionId)) await run(backend.interruptRun({ threadId: params.sessionId as ThreadId }))
      return {}
    })
    .onRequest(acp.methods.agent.session.list, async ({ params }) => {
      const threads = await call(backend.listThreads({}))
      return {
        sessions: threads
          .filter((t) => t.workspace !== null && (params.cwd == null || t.workspace === params.cwd))
          .map((t) => ({ sessionId: t.id, cwd: t.workspace!, title: t.title, updatedAt: t.updatedAt }))
      }
    })
    .onRequest(acp.methods.agent.session.setConfigOption, async ({ params }) => {
      sessions.sessionOf(params.sessionId)
      if (params.configId !== "provider" || typeof params.value !== "string") {
        throw new acp.RequestError(-32602, `Skein has one session option, "provider", a name`, {
          _tag: "InvalidInput",
          message: `unknown config option ${params.configId}`
        })
      }
      await sessions.setProvider(params.sessionId, params.value)
      return { configOptions: await sessions.configOptions(params.sessionId) }
    })
    .onRequest(acp.methods.agent.session.prompt, ({ client, params }) => prompt(client, params))
    .onNotification(acp.methods.agent.session.cancel, async ({ params }) => {
      if (sessions.providerOf(params.sessionId) === undefined) return
      await run(backend.interruptRun({ threadId: params.sessionId as ThreadId }))
    })
}
