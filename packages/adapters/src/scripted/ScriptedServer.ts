/**
 * The scripted provider's protocol handler (its directives: docs/ARCHITECTURE.md): it answers each
 * request line, runs turns by obeying the directives in the user message (ScriptedTurn.ts), and
 * keeps native threads in a ThreadStore. Transport-free: main.ts feeds it lines.
 */
import { Schema } from "effect"
import type { ProviderCapabilities } from "@skein/domain"
import { ProviderEvent as ProviderEventSchema } from "@skein/domain"
import type { Method, ParamsOf, ResultOf } from "./Protocol.js"
import { Methods, Request } from "./Protocol.js"
import type { NativeThread } from "./NativeThread.js"
import { forkThread, freshNativeRef, rollbackThread, ThreadStore } from "./NativeThread.js"
import { runTurn, type ServerState, WireFailure } from "./ScriptedTurn.js"

export interface ScriptedServerOptions {
  readonly stateDir: string
  readonly name: string
  readonly capabilities: ProviderCapabilities
  /** Writes one JSON line to the adapter. */
  readonly send: (message: unknown) => void
  /** Ends the process abruptly, without cleanup (`[[crash]]`). */
  readonly crash: () => never
}

const encodeEvent = Schema.encodeSync(ProviderEventSchema)

/** Deterministic summary: a header and each section's lines, cut to about 4 characters per token. */
export const summarise = (name: string, params: ParamsOf<"summarise">): string => {
  const lines = [`Summary by ${name}:`]
  for (const section of params.payload.sections) {
    if (section.lines.length === 0) continue
    lines.push(`${section.title}:`, ...section.lines.map((l) => `- ${l}`))
  }
  const budgetChars = Math.max(0, Math.floor(params.budgetTokens * 4))
  const kept: Array<string> = []
  let used = 0
  for (const line of lines) {
    const cost = line.length + (kept.length > 0 ? 1 : 0)
    if (used + cost > budgetChars) break
    kept.push(line)
    used += cost
  }
  return kept.join("\n")
}

/** The native thread as stored, or `resume_failed`. */
const storedThread = (server: ServerState, nativeRef: string): NativeThread => {
  const thread = server.store.load(nativeRef)
  if (thread === null) {
    throw new WireFailure("resume_failed", `native thread ${nativeRef} is unknown or was deleted`)
  }
  return thread
}

type MethodHandlers = { [M in Method]: (params: ParamsOf<M>) => ResultOf<M> | Promise<ResultOf<M>> }

/** Each method's handler, as far as the provider's capabilities allow it. */
const methodHandlers = (server: ServerState, { capabilities, name }: ScriptedServerOptions): MethodHandlers => {
  const { idle, loaded, running, steers, store } = server
  const stored = (nativeRef: string) => storedThread(server, nativeRef)
  return {
    initialize: () => ({ name, protocolVersion: 1 }),
    "thread/start": ({ model, workspace }) => {
      const thread: NativeThread = {
        nativeRef: freshNativeRef(),
        workspace,
        model,
        createdAt: new Date().toISOString(),
        forkedFrom: null,
        turns: [],
        approvals: {}
      }
      store.save(thread)
      loaded.set(thread.nativeRef, thread)
      return { nativeRef: thread.nativeRef }
    },
    "thread/resume": ({ nativeRef }) => {
      if (!capabilities.resume) throw new WireFailure("unsupported", `${name} cannot resume native threads`)
      idle(nativeRef)
      const thread = stored(nativeRef)
      loaded.set(nativeRef, thread)
      return { turns: thread.turns.length }
    },
    "thread/fork": ({ atTurnRef, nativeRef }) => {
      if (capabilities.fork === "none") throw new WireFailure("unsupported", `${name} cannot fork native threads`)
      if (capabilities.fork === "latest" && atTurnRef !== null) {
        throw new WireFailure("unsupported", `${name} can fork only at the latest turn, not at ${atTurnRef}`)
      }
      const forked = forkThread(stored(nativeRef), atTurnRef, freshNativeRef(), new Date().toISOString())
      if (forked === "unknown_turn") {
        throw new WireFailure("error", `native thread ${nativeRef} has no turn ${atTurnRef}`)
      }
      store.save(forked)
      loaded.set(forked.nativeRef, forked)
      return { nativeRef: forked.nativeRef }
    },
    "thread/rollback": ({ beforeTurnRef, nativeRef }) => {
      if (capabilities.rollback === "none") {
        throw new WireFailure("unsupported", `${name} cannot roll back native threads`)
      }
      idle(nativeRef)
      const thread = stored(nativeRef)
      const rolled = rollbackThread(thread, beforeTurnRef)
      if (rolled === "unknown_turn") {
        throw new WireFailure("error", `native thread ${nativeRef} has no turn ${beforeTurnRef}`)
      }
      store.save(rolled)
      if (loaded.has(nativeRef)) loaded.set(nativeRef, rolled)
      return { removedTurns: thread.turns.length - rolled.turns.length }
    },
    "turn/start": (params) => runTurn(server, params),
    "turn/steer": ({ message, nativeRef }) => {
      if (!capabilities.steer) throw new WireFailure("unsupported", `${name} cannot steer a running turn`)
      const steered = steers.get(nativeRef)
      if (steered === undefined) throw new WireFailure("error", `no turn is running on native thread ${nativeRef}`)
      steered.push(message)
      return {}
    },
    "turn/interrupt": ({ nativeRef }) => {
      const abort = running.get(nativeRef)
      abort?.abort()
      return { interrupted: abort !== undefined }
    },
    "approval/respond": ({ approvalId, decision, nativeRef }) => {
      const thread = loaded.get(nativeRef) ?? stored(nativeRef)
      if (thread.approvals[approvalId] === undefined) {
        throw new WireFailure("error", `native thread ${nativeRef} has no approval ${approvalId}`)
      }
      const next: NativeThread = {
        ...thread,
        approvals: { ...thread.approvals, [approvalId]: { ...thread.approvals[approvalId], status: decision } }
      }
      store.save(next)
      if (loaded.has(nativeRef)) loaded.set(nativeRef, next)
      return {}
    },
    summarise: (params) => {
      if (!capabilities.summarise) throw new WireFailure("unsupported", `${name} does not write summaries`)
      return { text: summarise(name, params) }
    }
  }
}

export const makeScriptedServer = (options: ScriptedServerOptions) => {
  const running = new Map<string, AbortController>()
  const server: ServerState = {
    store: new ThreadStore(options.stateDir),
    loaded: new Map(),
    running,
    steers: new Map(),
    emit: (nativeRef, event) => options.send({ method: "event", params: { nativeRef, event: encodeEvent(event) } }),
    idle: (nativeRef) => {
      if (running.has(nativeRef)) throw new WireFailure("error", `native thread ${nativeRef} has a turn running`)
    },
    crash: options.crash
  }
  const handlers = methodHandlers(server, options)

  const dispatch = async (request: Request): Promise<unknown> => {
    if (!Object.hasOwn(Methods, request.method)) {
      throw new WireFailure("unsupported", `unknown method ${request.method}`)
    }
    const method = request.method as Method
    let params: unknown
    try {
      params = Schema.decodeUnknownSync(Methods[method].params as Schema.Schema<unknown, unknown>)(request.params)
    } catch (error) {
      throw new WireFailure("error", `invalid params for ${method}: ${String(error)}`)
    }
    const handler = handlers[method] as (params: unknown) => unknown
    return await handler(params)
  }

  /** Handles one input line. Lines that are not requests are ignored. */
  const handleLine = (line: string): void => {
    let request: Request
    try {
      request = Schema.decodeUnknownSync(Request)(JSON.parse(line))
    } catch {
      return
    }
    dispatch(request).then(
      (result) => options.send({ id: request.id, result }),
      (error: unknown) =>
        options.send({
          id: request.id,
          error:
            error instanceof WireFailure
              ? { kind: error.kind, message: error.message }
              : { kind: "error", message: error instanceof Error ? error.message : String(error) }
        })
    )
  }

  return { handleLine }
}
