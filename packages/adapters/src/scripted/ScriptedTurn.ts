/**
 * A scripted turn: the directives of its message obeyed in order (`[[sleep:50]]`,
 * `[[cmd:npm test:1]]`, ...; Directives.ts reads them), its items and end emitted as
 * events, and the turn appended to its native thread.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { ProviderEvent, ProviderFailureKind, TurnItemContent } from "@skein/domain"
import { makeId } from "@skein/domain"
import { containedPath } from "../workspace/WorkspacePath.js"
import { type Directive, parseDirectives, reasoningText, recalls } from "./Directives.js"
import type { ParamsOf, ResultOf } from "./Protocol.js"
import type { NativeThread, NativeTurn, ThreadStore } from "./NativeThread.js"
import { contextLength, contextOf, freshNativeRef, freshTurnRef, withTurn } from "./NativeThread.js"

/** A failure the server answers with, of a provider failure's kind. */
export class WireFailure extends Error {
  constructor(
    readonly kind: ProviderFailureKind,
    message: string
  ) {
    super(message)
  }
}

/** What the server keeps in this process, which its turns read and change. */
export interface ServerState {
  readonly store: ThreadStore
  /** Threads opened in this process (started, resumed or forked). */
  readonly loaded: Map<string, NativeThread>
  /** Running turns by native ref. */
  readonly running: Map<string, AbortController>
  /** Messages steered into each running turn, answered at its end, in order. */
  readonly steers: Map<string, Array<string>>
  readonly emit: (nativeRef: string, event: ProviderEvent) => void
  /** Fails when a turn runs on the native thread. */
  readonly idle: (nativeRef: string) => void
  /** Ends the process abruptly, without cleanup (`[[crash]]`). */
  readonly crash: () => never
}

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

/** A turn while its directives run: what they add to. */
interface TurnInProgress {
  readonly nativeRef: string
  readonly turnRef: string
  readonly workspace: string | null
  readonly signal: AbortSignal
  readonly items: Array<TurnItemContent>
  readonly outputs: Array<string>
  readonly approvals: Record<string, { question: string; status: "open" }>
  /** Records an item and emits it. */
  readonly item: (content: TurnItemContent) => void
  /** What the model would have read (built only for a recall). */
  readonly contextNow: () => ReadonlyArray<string>
  /** The native thread is deleted once the turn ends (`[[forget]]`). */
  forget: boolean
}

/** Obeys one directive; a promise only when it waits. */
const obey = (server: ServerState, turn: TurnInProgress, directive: Directive): Promise<unknown> | undefined => {
  const { item, outputs } = turn
  switch (directive._tag) {
    case "Crash":
      return server.crash()
    case "Fail":
      throw new WireFailure("error", "the turn failed as the message asked ([[fail]])")
    case "Sleep":
      return sleep(directive.ms, turn.signal)
    case "Recall":
      outputs.push(`recall:${directive.word}=${recalls(directive.word, turn.contextNow()) ? "yes" : "no"}`)
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
      turn.approvals[approvalId] = { question: directive.question, status: "open" }
      item({ type: "approval_request", approvalId, question: directive.question, status: "open" })
      break
    }
    case "Subagent":
      server.emit(turn.nativeRef, {
        _tag: "SubagentRequested",
        provider: directive.provider,
        prompt: directive.prompt
      })
      break
    case "Child": {
      // A child agent this provider runs itself, with a native thread of its own.
      const childRef = `child_${turn.turnRef}_${turn.items.length}`
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
      item(writeFile(turn.workspace, directive.path, directive.content))
      break
    case "Forget":
      turn.forget = true
      break
  }
  return undefined
}

/** The turn's end: its reply, the turn kept (or its thread forgotten), its usage and end emitted. */
const endTurn = (
  server: ServerState,
  thread: NativeThread,
  params: ParamsOf<"turn/start">,
  turn: TurnInProgress,
  steered: ReadonlyArray<string>
): ResultOf<"turn/start"> => {
  const { handoff, message, nativeRef } = params
  const { turnRef } = turn
  const interrupted = turn.signal.aborted
  server.steers.delete(nativeRef)
  for (const text of steered) turn.outputs.push(`steered: ${text}`)
  const reply = interrupted ? "" : ["ok", ...turn.outputs].join("\n")
  if (!interrupted) turn.item({ type: "assistant_message", text: reply })
  const ended: NativeTurn = {
    turnRef,
    status: interrupted ? "interrupted" : "completed",
    message: [message, ...steered].join("\n"),
    handoff,
    reply,
    items: turn.items
  }
  const next = withTurn(thread, ended, turn.approvals)
  if (turn.forget) {
    server.store.delete(nativeRef)
    server.loaded.delete(nativeRef)
  } else {
    server.store.appendTurn(nativeRef, ended, turn.approvals)
    server.loaded.set(nativeRef, next)
  }
  // The scripted provider's count: a token per four characters of what the model read
  // (its context, this turn's handoff and message) and of its reply.
  const read = contextLength(thread) + (handoff === null ? 0 : handoff.text.length) + message.length
  const usage = { inputTokens: Math.ceil(read / 4), outputTokens: Math.ceil(reply.length / 4) }
  server.emit(nativeRef, interrupted ? { _tag: "TurnInterrupted", turnRef } : { _tag: "TurnCompleted", turnRef, usage })
  return { turnRef, status: interrupted ? "interrupted" : "completed" }
}

/** Runs a turn on an open native thread, one at a time per thread. */
export const runTurn = async (server: ServerState, params: ParamsOf<"turn/start">): Promise<ResultOf<"turn/start">> => {
  // When this process received the turn, for the runtime's dispatch figures.
  const receivedAt = performance.timeOrigin + performance.now()
  const { handoff, message, nativeRef } = params
  const thread = server.loaded.get(nativeRef)
  if (thread === undefined) {
    throw new WireFailure(
      "error",
      `native thread ${nativeRef} is not open in this session; start, resume or fork it first`
    )
  }
  server.idle(nativeRef)
  const abort = new AbortController()
  server.running.set(nativeRef, abort)
  // Messages steered into this turn while it runs: answered at its end, in order.
  const steered: Array<string> = []
  server.steers.set(nativeRef, steered)
  try {
    const turnRef = freshTurnRef()
    server.emit(nativeRef, { _tag: "TurnStarted", turnRef, receivedAt })
    let context: ReadonlyArray<string> | undefined
    const items: Array<TurnItemContent> = []
    const turn: TurnInProgress = {
      nativeRef,
      turnRef,
      workspace: params.workspace ?? thread.workspace,
      signal: abort.signal,
      items,
      outputs: [],
      approvals: {},
      item: (content) => {
        items.push(content)
        server.emit(nativeRef, { _tag: "Item", item: content })
      },
      contextNow: () => (context ??= [...contextOf(thread), ...(handoff === null ? [] : [handoff.text])]),
      forget: false
    }
    for (const directive of parseDirectives(message)) {
      if (abort.signal.aborted) break
      const waiting = obey(server, turn, directive)
      if (waiting !== undefined) await waiting
    }
    return endTurn(server, thread, params, turn, steered)
  } finally {
    server.running.delete(nativeRef)
    server.steers.delete(nativeRef)
  }
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
