/**
 * Claude Code's process pool at the driver (the pinned binary, offline against the mock
 * Messages API): an idle `claude` process is closed once `processIdleMs` has passed
 * without a turn on its thread, and the next turn opens a new process that resumes the
 * session natively; a process in use is never closed; and a burst of uses of a session
 * without a process starts one.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import type { ProviderEvent, ProviderSessionHandle, TurnInput } from "@skein/domain"
import { makeId, ProviderName } from "@skein/domain"
import { claudeCapabilities, makeClaudeAdapter, TurnEvents } from "@skein/adapters"
import { Effect, Either, Exit, Scope } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { removeDir, tempDir } from "../support/runtime.js"
import type { MockServer } from "./mocks/MockServer.js"
import * as Messages from "./mocks/MessagesMock.js"
import {
  claudeEnv,
  claudePlaceholder,
  descendants,
  exeOf,
  processCensus,
  requireBinaries,
  waitUntil
} from "./support.js"

const IDLE_MS = 1500

let dir: string
let messages: MockServer
const census = processCensus()

beforeAll(async () => {
  requireBinaries()
  dir = Fs.realpathSync(tempDir("skein-claude-pool-"))
  messages = await Messages.startMessagesMock({ logFile: Path.join(dir, "claude-mock-requests.jsonl") })
})

afterAll(async () => {
  await messages?.close()
  const ended = await waitUntil(() => census.leftovers().length === 0, 10_000)
  expect(ended ? [] : census.leftovers()).toEqual([])
  if (dir) removeDir(dir)
})

/** The live `claude` processes under this one (streaming JSON mode, not their helpers). */
const claudes = (): Array<number> =>
  descendants().filter((pid) => {
    try {
      return Fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("stream-json") && exeOf(pid) !== null
    } catch {
      return false
    }
  })

const kinds = (events: ReadonlyArray<ProviderEvent>) =>
  events.map((e) => (e._tag === "Item" ? `${e._tag}:${e.item.type}` : e._tag))

/** A Claude adapter of its own, named `name`, with `processIdleMs` = `idleMs`. */
const adapterFor = (name: string, idleMs: number) =>
  makeClaudeAdapter({
    name: ProviderName.make(`claude-pool-${name}`),
    capabilities: claudeCapabilities,
    command: [claudePlaceholder],
    env: claudeEnv(dir, messages.url),
    stateDir: Path.join(dir, `state-${name}`),
    processIdleMs: idleMs
  })

/**
 * `body` on a new thread of a session of an adapter of its own (`adapterFor`);
 * afterwards, the session closed, no `claude` process is left.
 */
const onSession = async (
  name: string,
  idleMs: number,
  body: (context: {
    readonly session: ProviderSessionHandle
    readonly native: { readonly nativeRef: string }
    readonly turn: (message: string) => TurnInput
  }) => Effect.Effect<void, unknown>
) => {
  const adapter = adapterFor(name, idleMs)
  const scope = await Effect.runPromise(Scope.make())
  try {
    await Effect.runPromise(
      Effect.gen(function* () {
        const session = yield* adapter.openSession({ workspace: dir }).pipe(Scope.extend(scope))
        const native = yield* session.startThread({ workspace: dir, model: null })
        const turn = (message: string): TurnInput => ({
          nativeRef: native.nativeRef,
          runId: makeId.run(),
          message,
          handoff: null,
          model: null,
          workspace: dir
        })
        yield* body({ session, native, turn })
      })
    )
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
  expect(await waitUntil(() => claudes().length === 0, 10_000)).toBe(true)
}

describe("Claude Code's process pool", () => {
  it("closes an idle process after processIdleMs; the next turn resumes the session in a new one", () =>
    onSession("idle", IDLE_MS, ({ session, turn }) =>
      Effect.gen(function* () {
        const first = yield* TurnEvents.collect((onEvents) => session.runTurn(turn("the river is the NILE"), onEvents))
        expect(kinds(first)).toEqual(["TurnStarted", "Item:assistant_message", "TurnCompleted"])
        census.sample()
        const [pid] = claudes()
        expect(claudes()).toEqual([pid])
        const idleSince = Date.now()

        // Still there well within the time to live, gone once it has passed.
        yield* Effect.sleep(IDLE_MS / 3)
        expect(exeOf(pid!)).not.toBeNull()
        expect(yield* Effect.promise(() => waitUntil(() => exeOf(pid!) === null, 10_000))).toBe(true)
        expect(Date.now() - idleSince).toBeGreaterThanOrEqual(IDLE_MS - 50)
        expect(claudes()).toEqual([])

        const from = messages.requests.length
        const second = yield* TurnEvents.collect((onEvents) => session.runTurn(turn("which river?"), onEvents))
        expect(kinds(second)).toEqual(["TurnStarted", "Item:assistant_message", "TurnCompleted"])
        census.sample()
        const [again] = claudes()
        expect(again).toBeDefined()
        expect(again).not.toBe(pid)
        // Resumed natively: the model's request carries the first turn.
        const request = messages.requests.slice(from).find((r) => Messages.latestPrompt(r) === "which river?")!
        expect(Messages.allInputText(request)).toContain("the river is the NILE")
      })
    ))

  it("a burst of resumes and a turn on a session whose process was closed starts one process", () =>
    onSession("burst", 300, ({ native, session, turn }) =>
      Effect.gen(function* () {
        yield* TurnEvents.collect((onEvents) => session.runTurn(turn("first"), onEvents))
        census.sample()
        const [pid] = claudes()
        expect(yield* Effect.promise(() => waitUntil(() => exeOf(pid!) === null, 10_000))).toBe(true)

        // All at once: whichever starts the process, the others take it.
        const [, , , events] = yield* Effect.all(
          [
            session.resumeThread(native.nativeRef),
            session.resumeThread(native.nativeRef),
            session.resumeThread(native.nativeRef),
            TurnEvents.collect((onEvents) => session.runTurn(turn("again"), onEvents))
          ],
          { concurrency: "unbounded" }
        )
        expect(kinds(events)).toEqual(["TurnStarted", "Item:assistant_message", "TurnCompleted"])
        census.sample()
        const started = claudes()
        expect(started).toHaveLength(1)
        expect(started[0]).not.toBe(pid)
      })
    ))

  it("keeps a process through a turn longer than processIdleMs, begun while it was idle", () => {
    const idleMs = 400
    return onSession("held", idleMs, ({ session, turn }) =>
      Effect.gen(function* () {
        yield* TurnEvents.collect((onEvents) => session.runTurn(turn("first"), onEvents))
        census.sample()
        const [pid] = claudes()
        // Idle for a while, then a turn that outlasts the time to live: the process
        // is in use, so the idle process's due time passes without closing it.
        yield* Effect.sleep(idleMs / 4)
        const slow = yield* TurnEvents.collect((onEvents) =>
          session.runTurn(turn(`a slow one [[slow:${idleMs * 3}]]`), onEvents)
        )
        expect(kinds(slow)).toEqual(["TurnStarted", "Item:assistant_message", "TurnCompleted"])
        expect(claudes()).toEqual([pid])
        // Then idle again: closed once the time to live has passed after that turn.
        expect(yield* Effect.promise(() => waitUntil(() => exeOf(pid!) === null, 10_000))).toBe(true)
      })
    )
  })

  it("closing the session while a process starts fails the start as closed and leaves no process", async () => {
    const adapter = adapterFor("closing", IDLE_MS)
    const scope = await Effect.runPromise(Scope.make())
    const session = await Effect.runPromise(adapter.openSession({ workspace: dir }).pipe(Scope.extend(scope)))
    const starting = Effect.runPromise(Effect.either(session.startThread({ workspace: dir, model: null })))
    // The process is spawned, and still initializing (that takes a few hundred ms).
    expect(await waitUntil(() => claudes().length === 1, 10_000)).toBe(true)
    census.sample()
    await Effect.runPromise(Scope.close(scope, Exit.void))
    const started = await starting
    expect(Either.isLeft(started) ? started.left.message : "started").toContain("the Claude session was closed")
    expect(await waitUntil(() => claudes().length === 0, 10_000)).toBe(true)
  })
})
