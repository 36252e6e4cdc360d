/**
 * The scripted provider's protocol handler (its directives: docs/ARCHITECTURE.md): it answers each
 * request line, runs turns by obeying the directives in the user message, and
 * keeps native threads in a ThreadStore. Transport-free: main.ts feeds it lines.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Schema } from "effect"
import type { ProviderCapabilities, ProviderEvent, ProviderFailureKind, TurnItemContent } from "@skein/domain"
import { makeId, ProviderEvent as ProviderEventSchema } from "@skein/domain"
import { containedPath } from "../workspace/WorkspacePath.js"
import { parseDirectives, reasoningText, recalls } from "./Directives.js"
import type { Method, ParamsOf, ResultOf } from "./Protocol.js"
import { Methods, Request } from "./Protocol.js"
import type { NativeThread, NativeTurn } from "./NativeThread.js"
import {
  contextLength,
  contextOf,
  forkThread,
  freshNativeRef,
  freshTurnRef,
  rollbackThread,
  ThreadStore,
  withTurn
} from "./NativeThread.js"

export interface ScriptedServerOptions {
  readonly stateDir: string
  readonly name: string
  readonly capabilities: ProviderCapabilities
  /** Writes one JSON line to the adapter. */
  readonly send: (message: unknown) => void
  /** Ends the process abruptly, without cleanup (`[[crash]]`). */
  readonly crash: () => never
}

class WireFailure extends Error {
  constructor(
    readonly kind: ProviderFailureKind,
    message: string
  ) {
    super(message)
  }
}

const encodeEvent = Schema.encodeSync(ProviderEventSchema)

/** Resolves after `ms`, or early (with `false`) when the signal aborts. */
const sleep = (ms: number, signal: AbortSignal): Promise<boolean> =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve(false)
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort)
      resolve(true)
    }, ms)
    const onAbort = () => {
      clearTimeout(timer)
      resolve(false)
    }
    signal.addEventListener("abort", onAbort, { once: true })
  })

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

export const makeScriptedServer = (options: ScriptedServerOptions) => {
  const { capabilities, name } = options
  const store = new ThreadStore(options.stateDir)
  /** Threads opened in this process (started, resumed or forked). */
  const loaded = new Map<string, NativeThread>()
  /** Running turns by native ref. */
  const running = new Map<string, AbortController>()
  const steers = new Map<string, Array<string>>()

  const emit = (nativeRef: string, event: ProviderEvent) =>
    options.send({ method: "event", params: { nativeRef, event: encodeEvent(event) } })

  const stored = (nativeRef: string): NativeThread => {
    const thread = store.load(nativeRef)
    if (thread === null) {
      throw new WireFailure("resume_failed", `native thread ${nativeRef} is unknown or was deleted`)
    }
    return thread
  }

  const idle = (nativeRef: string) => {
    if (running.has(nativeRef)) throw new WireFailure("error", `native thread ${nativeRef} has a turn running`)
  }

  const runTurn = async (params: ParamsOf<"turn/start">): Promise<ResultOf<"turn/start">> => {
    // When this process received the turn, for the runtime's dispatch figures.
    const receivedAt = performance.timeOrigin + performance.now()
    const { handoff, message, nativeRef } = params
    const thread = loaded.get(nativeRef)
    if (thread === undefined) {
      throw new WireFailure(
        "error",
        `native thread ${nativeRef} is not open in this session; start, resume or fork it first`
      )
    }
    idle(nativeRef)
    const abort = new AbortController()
    running.set(nativeRef, abort)
    // Messages steered into this turn while it runs: answered at its end, in order.
    const steered: Array<string> = []
    steers.set(nativeRef, steered)
    try {
      const turnRef = freshTurnRef()
      emit(nativeRef, { _tag: "TurnStarted", turnRef, receivedAt })
      const workspace = params.workspace ?? thread.workspace
      // Built only for a recall: what the model would have read.
      let context: ReadonlyArray<string> | undefined
      const contextNow = () => (context ??= [...contextOf(thread), ...(handoff === null ? [] : [handoff.text])])
      const items: Array<TurnItemContent> = []
      const outputs: Array<string> = []
      const approvals: Record<string, { question: string; status: "open" }> = {}
      const item = (content: TurnItemContent) => {
        items.push(content)
        emit(nativeRef, { _tag: "Item", item: content })
      }
      let forget = false
      for (const directive of parseDirectives(message)) {
        if (abort.signal.aborted) break
        switch (directive._tag) {
          case "Crash":
            return options.crash()
          case "Fail":
            throw new WireFailure("error", "the turn failed as the message asked ([[fail]])")
          case "Sleep":
            await sleep(directive.ms, abort.signal)
            break
          case "Recall":
            outputs.push(`recall:${directive.word}=${recalls(directive.word, contextNow()) ? "yes" : "no"}`)
            break
          case "Decide":
            outputs.push(`decision: ${directive.text}`)
            break
          case "Reason":
            item({ type: "reasoning", text: reasoningText(directive.text) })
            break
          case "Cmd":
            item({
              type: "command_execution",
              command: directive.command,
              exitCode: directive.exitCode,
              output: `ran ${directive.command}`
            })
            break
          case "Plan":
            item({ type: "plan", steps: directive.steps.map((text) => ({ text, status: "pending" as const })) })
            break
          case "Ask": {
            const approvalId = makeId.approval()
            approvals[approvalId] = { question: directive.question, status: "open" }
            item({ type: "approval_request", approvalId, question: directive.question, status: "open" })
            break
          }
          case "Subagent":
            emit(nativeRef, { _tag: "SubagentRequested", provider: directive.provider, prompt: directive.prompt })
            break
          case "Child": {
            // A child agent this provider runs itself, with a native thread of its own.
            const childRef = `child_${turnRef}_${items.length}`
            const child = { type: "child_agent" as const, childRef, description: directive.description }
            item({ ...child, status: "running", nativeThreadRef: null, result: null })
            const childThread = freshNativeRef()
            item({
              ...child,
              status: "completed",
              nativeThreadRef: childThread,
              result: `done: ${directive.description}`
            })
            break
          }
          case "Write":
            item(writeFile(workspace, directive.path, directive.content))
            break
          case "Forget":
            forget = true
            break
        }
      }
      const interrupted = abort.signal.aborted
      steers.delete(nativeRef)
      for (const text of steered) outputs.push(`steered: ${text}`)
      const reply = interrupted ? "" : ["ok", ...outputs].join("\n")
      if (!interrupted) item({ type: "assistant_message", text: reply })
      const turn: NativeTurn = {
        turnRef,
        status: interrupted ? "interrupted" : "completed",
        message: [message, ...steered].join("\n"),
        handoff,
        reply,
        items
      }
      const next = withTurn(thread, turn, approvals)
      if (forget) {
        store.delete(nativeRef)
        loaded.delete(nativeRef)
      } else {
        store.appendTurn(nativeRef, turn, approvals)
        loaded.set(nativeRef, next)
      }
      // The scripted provider's count: a token per four characters of what the model read
      // (its context, this turn's handoff and message) and of its reply.
      const read = contextLength(thread) + (handoff === null ? 0 : handoff.text.length) + message.length
      const usage = { inputTokens: Math.ceil(read / 4), outputTokens: Math.ceil(reply.length / 4) }
      emit(nativeRef, interrupted ? { _tag: "TurnInterrupted", turnRef } : { _tag: "TurnCompleted", turnRef, usage })
      return { turnRef, status: interrupted ? "interrupted" : "completed" }
    } finally {
      running.delete(nativeRef)
      steers.delete(nativeRef)
    }
  }

  const handlers: { [M in Method]: (params: ParamsOf<M>) => ResultOf<M> | Promise<ResultOf<M>> } = {
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
    "turn/start": runTurn,
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

/** Writes `relative` inside `workspace` (judged on real paths); an error item when it may not. */
const writeFile = (workspace: string | null, relative: string, content: string): TurnItemContent => {
  if (workspace === null) {
    return { type: "error", message: `cannot write ${relative}: the turn has no workspace`, code: "write_rejected" }
  }
  const contained = containedPath(workspace, relative)
  if (contained._tag === "Refused") {
    return { type: "error", message: `cannot write ${relative}: ${contained.problem}`, code: "write_rejected" }
  }
  const { target } = contained
  const existed = Fs.existsSync(target)
  if (existed && !Fs.statSync(target).isFile()) {
    return { type: "error", message: `cannot write ${relative}: it is not a file`, code: "write_rejected" }
  }
  Fs.mkdirSync(Path.dirname(target), { recursive: true })
  Fs.writeFileSync(target, content)
  return {
    type: "file_change",
    path: contained.relative,
    kind: existed ? "modify" : "add",
    summary: `${existed ? "modified" : "added"} ${contained.relative} (${Buffer.byteLength(content)} bytes)`
  }
}
