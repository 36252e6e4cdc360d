/**
 * The scripted provider's thread store: a thread's first line is its record, each turn
 * one appended line, read back whole; a torn last line is ignored; a whole write
 * replaces what was appended.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { NativeThread, NativeTurn } from "../src/scripted/NativeThread.js"
import {
  contextLength,
  contextOf,
  forkThread,
  rollbackThread,
  ThreadStore,
  withTurn
} from "../src/scripted/NativeThread.js"

const turn = (n: number): NativeTurn => ({
  turnRef: `stn_${n}`,
  status: "completed",
  message: `message ${n}`,
  handoff: null,
  reply: `ok ${n}`,
  items: [{ type: "assistant_message", text: `ok ${n}` }]
})

const fresh = (): NativeThread => ({
  nativeRef: "sth_test",
  workspace: null,
  model: "m",
  createdAt: "2026-11-30T00:00:00.000Z",
  forkedFrom: null,
  turns: [],
  approvals: {}
})

describe("ThreadStore", () => {
  it("appends one line per turn, reads the thread back whole, ignores a torn last line", () => {
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skein-native-"))
    try {
      const store = new ThreadStore(dir)
      const file = Path.join(dir, "threads", "sth_test.jsonl")
      store.save(fresh())
      const first = Fs.readFileSync(file, "utf8")
      store.appendTurn("sth_test", turn(1), { ap_1: { question: "may I?", status: "open" } })
      const sizeAfterOne = Fs.statSync(file).size
      store.appendTurn("sth_test", turn(2), {})
      // The record line is left as it was; each turn adds a line of about its own size.
      expect(Fs.readFileSync(file, "utf8").startsWith(first)).toBe(true)
      expect(Fs.statSync(file).size - sizeAfterOne).toBeLessThan(sizeAfterOne - first.length + 20)
      const loaded = store.load("sth_test")
      expect(loaded).toEqual({
        ...fresh(),
        turns: [turn(1), turn(2)],
        approvals: { ap_1: { question: "may I?", status: "open" } }
      })
      // A crash in the middle of an append leaves half a line: the turns before it stand.
      Fs.appendFileSync(file, '{"turn":{"turnRef":"stn_3","sta')
      expect(store.load("sth_test")?.turns.map((t) => t.turnRef)).toEqual(["stn_1", "stn_2"])
      // A whole write (a rollback) replaces everything, the torn line included.
      const rolled = rollbackThread(store.load("sth_test")!, "stn_2")
      if (rolled === "unknown_turn") throw new Error("stn_2 exists")
      store.save(rolled)
      store.appendTurn("sth_test", turn(4), {})
      expect(store.load("sth_test")?.turns.map((t) => t.turnRef)).toEqual(["stn_1", "stn_4"])
      expect(store.load("sth_other")).toBeNull()
      expect(store.load("../escape")).toBeNull()
    } finally {
      Fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe("contextLength", () => {
  it("is the length of contextOf, carried from turn to turn and counted afresh after a fork", () => {
    const chars = (thread: NativeThread) => contextOf(thread).reduce((n, text) => n + text.length, 0)
    let thread = fresh()
    for (let n = 1; n <= 50; n++) {
      const next: NativeTurn =
        n % 7 === 0
          ? { ...turn(n), handoff: { handoffId: `hof_${n}`, delivery: "preamble", text: "x".repeat(n) } }
          : turn(n)
      thread = withTurn(thread, next, n % 5 === 0 ? { [`ap_${n}`]: { question: "q", status: "open" } } : {})
      expect(contextLength(thread)).toBe(chars(thread))
    }
    expect(Object.keys(thread.approvals)).toHaveLength(10)
    const forked = forkThread(thread, "stn_20", "sth_fork", "2026-11-30T00:00:00.000Z")
    if (forked === "unknown_turn") throw new Error("stn_20 is a turn of the thread")
    expect(contextLength(forked)).toBe(chars(forked))
    expect(contextLength(forked)).toBeLessThan(contextLength(thread))
  })
})
