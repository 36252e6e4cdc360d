/**
 * The scripted provider's native threads: what one holds, the pure operations on
 * it (context, fork, rollback), and its store on disk, so a new process can resume
 * it: one file per thread, of JSON lines. The first is the whole thread, written
 * atomically (temp file + rename) when a thread starts, forks, rolls back or answers
 * an approval; each turn then appends one line (the turn and its approvals), so a
 * turn costs the same on a thread's 5,000th turn as on its first. A torn last line
 * (the process died while appending) is ignored.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Schema } from "effect"
import { ApprovalStatus, TurnItemContent } from "@skein/domain"
import { WireHandoff } from "./Protocol.js"

export const NativeTurn = Schema.Struct({
  turnRef: Schema.String,
  status: Schema.Literal("completed", "interrupted"),
  message: Schema.String,
  handoff: Schema.NullOr(WireHandoff),
  /** The assistant's reply; empty for an interrupted turn. */
  reply: Schema.String,
  items: Schema.Array(TurnItemContent)
})
export type NativeTurn = typeof NativeTurn.Type

export const NativeThread = Schema.Struct({
  nativeRef: Schema.String,
  workspace: Schema.NullOr(Schema.String),
  model: Schema.NullOr(Schema.String),
  createdAt: Schema.String,
  forkedFrom: Schema.NullOr(Schema.Struct({ nativeRef: Schema.String, atTurnRef: Schema.NullOr(Schema.String) })),
  turns: Schema.Array(NativeTurn),
  approvals: Schema.Record({
    key: Schema.String,
    value: Schema.Struct({ question: Schema.String, status: ApprovalStatus })
  })
})
export type NativeThread = typeof NativeThread.Type

/** One appended line: a turn and the approvals it opened. */
const TurnLine = Schema.Struct({ turn: NativeTurn, approvals: NativeThread.fields.approvals })

const randomHex = (): string => globalThis.crypto.randomUUID().replace(/-/g, "").slice(0, 20)
export const freshNativeRef = (): string => `sth_${randomHex()}`
export const freshTurnRef = (): string => `stn_${randomHex()}`

const textsOf = (turn: NativeTurn): ReadonlyArray<string> => [
  turn.message,
  turn.reply,
  ...(turn.handoff === null ? [] : [turn.handoff.text])
]

/** The texts this thread knows: earlier user messages, replies and handoff blocks. */
export const contextOf = (thread: NativeThread): ReadonlyArray<string> => thread.turns.flatMap(textsOf)

const lengths = new WeakMap<NativeThread, number>()
const turnLength = (turn: NativeTurn) => textsOf(turn).reduce((n, text) => n + text.length, 0)

/**
 * How many characters `contextOf(thread)` holds, without building it: counted once
 * per thread object, then carried from a thread to the next (`withTurn`), so a turn's
 * count costs the same on the 5,000th turn as on the first.
 */
export const contextLength = (thread: NativeThread): number => {
  let length = lengths.get(thread)
  if (length === undefined) {
    length = thread.turns.reduce((n, turn) => n + turnLength(turn), 0)
    lengths.set(thread, length)
  }
  return length
}

/** The thread after one more turn (and the approvals it opened). */
export const withTurn = (
  thread: NativeThread,
  turn: NativeTurn,
  approvals: NativeThread["approvals"]
): NativeThread => {
  const next: NativeThread = {
    ...thread,
    turns: [...thread.turns, turn],
    approvals: Object.keys(approvals).length === 0 ? thread.approvals : { ...thread.approvals, ...approvals }
  }
  lengths.set(next, contextLength(thread) + turnLength(turn))
  return next
}

/** A copy of `thread` under a new ref, with its turns up to and including `atTurnRef` (all when null). */
export const forkThread = (
  thread: NativeThread,
  atTurnRef: string | null,
  nativeRef: string,
  now: string
): NativeThread | "unknown_turn" => {
  let turns = thread.turns
  if (atTurnRef !== null) {
    const index = thread.turns.findIndex((t) => t.turnRef === atTurnRef)
    if (index < 0) return "unknown_turn"
    turns = thread.turns.slice(0, index + 1)
  }
  return {
    ...thread,
    nativeRef,
    createdAt: now,
    forkedFrom: { nativeRef: thread.nativeRef, atTurnRef },
    turns
  }
}

/** `thread` without `beforeTurnRef` and every later turn. */
export const rollbackThread = (thread: NativeThread, beforeTurnRef: string): NativeThread | "unknown_turn" => {
  const index = thread.turns.findIndex((t) => t.turnRef === beforeTurnRef)
  if (index < 0) return "unknown_turn"
  return { ...thread, turns: thread.turns.slice(0, index) }
}

const REF = /^[A-Za-z0-9_-]{1,64}$/

/** Native threads on disk under `<stateDir>/threads`. Synchronous: the provider is a small CLI. */
export class ThreadStore {
  private readonly dir: string
  constructor(stateDir: string) {
    this.dir = Path.join(stateDir, "threads")
    Fs.mkdirSync(this.dir, { recursive: true })
  }

  private file(nativeRef: string): string | null {
    return REF.test(nativeRef) ? Path.join(this.dir, `${nativeRef}.jsonl`) : null
  }

  /** The stored thread, or null when it is unknown, deleted or unreadable. */
  load(nativeRef: string): NativeThread | null {
    const file = this.file(nativeRef)
    if (file === null) return null
    let lines: Array<string>
    try {
      lines = Fs.readFileSync(file, "utf8").split("\n")
    } catch {
      return null
    }
    let thread: NativeThread
    try {
      thread = Schema.decodeUnknownSync(NativeThread)(JSON.parse(lines[0]!))
    } catch {
      return null
    }
    const turns = [...thread.turns]
    let approvals = thread.approvals
    for (const line of lines.slice(1)) {
      if (line === "") continue
      let appended: typeof TurnLine.Type
      try {
        appended = Schema.decodeUnknownSync(TurnLine)(JSON.parse(line))
      } catch {
        break // torn by a crash while appending: the turn was never acknowledged
      }
      turns.push(appended.turn)
      approvals = { ...approvals, ...appended.approvals }
    }
    return { ...thread, turns, approvals }
  }

  /** Writes the whole thread, replacing what was stored. */
  save(thread: NativeThread): void {
    const file = this.file(thread.nativeRef)
    if (file === null) throw new Error(`invalid native ref ${thread.nativeRef}`)
    const temp = `${file}.${process.pid}.${randomHex()}.tmp`
    Fs.writeFileSync(temp, `${JSON.stringify(Schema.encodeSync(NativeThread)(thread))}\n`)
    Fs.renameSync(temp, file)
  }

  /** Adds a turn (and the approvals it opened) to a stored thread: one appended line. */
  appendTurn(nativeRef: string, turn: NativeTurn, approvals: NativeThread["approvals"]): void {
    const file = this.file(nativeRef)
    if (file === null) throw new Error(`invalid native ref ${nativeRef}`)
    Fs.appendFileSync(file, `${JSON.stringify(Schema.encodeSync(TurnLine)({ turn, approvals }))}\n`)
  }

  delete(nativeRef: string): void {
    const file = this.file(nativeRef)
    if (file !== null) Fs.rmSync(file, { force: true })
  }
}
