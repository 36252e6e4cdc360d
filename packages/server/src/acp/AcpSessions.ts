/**
 * The sessions one ACP connection has open: each a thread, with the provider its next
 * prompt goes to (the session config option `provider`) and the newest event of its
 * thread a prompt has read. Also how an effect's failure reaches the editor: a JSON-RPC
 * error whose `data` is Skein's typed error.
 */
import * as acp from "@agentclientprotocol/sdk/unstable"
import type { ProviderName, ThreadId } from "@skein/domain"
import { Cause, Effect, Exit, Option } from "effect"
import type { AcpBackend } from "./AcpBackend.js"
import { availableCommands } from "./AcpCommands.js"

/** Runs an effect of the embedding runtime to its exit. */
export type AcpRun = <A, E>(effect: Effect.Effect<A, E>) => Promise<Exit.Exit<A, E>>

const codeOf = (tag: string): number =>
  tag === "InvalidInput" || tag === "ProviderNotFound" || tag === "InvalidWorkspace"
    ? -32602
    : tag === "ThreadNotFound" || tag === "RunNotFound"
      ? -32002
      : -32603

/** A failure as the JSON-RPC error the SDK sends: Skein's typed error in `data`. */
export const requestError = (cause: Cause.Cause<unknown>): acp.RequestError => {
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

/** The effect's value, or its failure thrown as the editor's error. */
export const makeCall =
  (run: AcpRun) =>
  async <A>(effect: Effect.Effect<A, unknown>): Promise<A> => {
    const exit = await run(effect)
    if (Exit.isSuccess(exit)) return exit.value
    throw requestError(exit.cause)
  }

export const makeAcpSessions = (backend: AcpBackend, run: AcpRun) => {
  const call = makeCall(run)
  /** Session (the thread's id) → the provider its next prompt goes to. */
  const providers = new Map<string, string>()
  /** Session → the newest event of its thread a prompt has read: the next one reads from there. */
  const seen = new Map<string, number>()

  const instances = () => call(Effect.map(backend.listProviders, (list) => list.map((p) => p.name)))

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

  return {
    call,
    configOptions,
    seen,
    providerOf: (sessionId: string) => providers.get(sessionId),

    /** Opens a session on this connection: its provider, and (once answered) the commands it offers. */
    open: async (context: acp.AgentContext, sessionId: string, provider: string | undefined) => {
      const [first] = await instances()
      providers.set(sessionId, providers.get(sessionId) ?? provider ?? first ?? "")
      // After the answer that names the session.
      setImmediate(() => {
        const update = { sessionUpdate: "available_commands_update" as const, availableCommands }
        void context.notify(acp.methods.client.session.update, { sessionId, update }).catch(() => undefined)
      })
      return { configOptions: await configOptions(sessionId) }
    },

    /** Forgets the session; whether it was open. */
    close: (sessionId: string) => {
      seen.delete(sessionId)
      return providers.delete(sessionId)
    },

    /** `/provider NAME`, and the config option: a configured instance, or ProviderNotFound. */
    setProvider: async (sessionId: string, value: string) => {
      const names = await instances()
      if (!names.includes(value)) {
        throw new acp.RequestError(-32602, `No provider instance "${value}"; configured: ${names.join(", ")}`, {
          _tag: "ProviderNotFound",
          message: `No provider instance "${value}"`
        })
      }
      providers.set(sessionId, value)
    },

    /** The session's thread, known to this connection (new or loaded), or a typed refusal. */
    sessionOf: (sessionId: string) => {
      const provider = providers.get(sessionId)
      if (provider === undefined) {
        throw new acp.RequestError(-32002, `Session ${sessionId} is not open here: call session/load first`, {
          _tag: "ThreadNotFound",
          message: `Session ${sessionId} is not open here`
        })
      }
      return { threadId: sessionId as ThreadId, provider: provider as ProviderName }
    }
  }
}

export type AcpSessions = ReturnType<typeof makeAcpSessions>
