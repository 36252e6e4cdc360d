/**
 * The scripted adapter against the real scripted provider process.
 * It runs the compiled program (dist/src/scripted/main.js): `npm test` builds
 * (`tsc -b`) before vitest; alone, run `npx tsc -b packages/adapters` first.
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as NodeChildProcess from "node:child_process"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Scope } from "effect"
import type {
  HandoffBlock,
  ProviderCapabilities,
  ProviderEvent,
  ProviderSessionHandle,
  TurnEventSink
} from "@skein/domain"
import { ContextHandoffId, defaultCapabilities, makeId, ProviderName } from "@skein/domain"
import { makeScriptedAdapter, scriptedServerPath } from "../src/scripted/ScriptedAdapter.js"
import { alphaCapabilities, betaCapabilities } from "../src/ProviderConfig.js"
import * as TurnEvents from "../src/process/TurnEvents.js"
import { isAlive } from "./support.js"

const roots: Array<string> = []
const tempDir = (): string => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skein-scripted-"))
  roots.push(dir)
  return dir
}
afterAll(() => {
  for (const dir of roots) Fs.rmSync(dir, { recursive: true, force: true })
})

const adapterWith = (capabilities: ProviderCapabilities, stateDir = tempDir(), name = "alpha") =>
  makeScriptedAdapter({ name: ProviderName.make(name), capabilities, stateDir })

const handoff = (text: string): HandoffBlock => ({
  handoffId: ContextHandoffId.make("hof_test"),
  delivery: "developer",
  text
})

const runTurn = <E>(
  session: ProviderSessionHandle,
  nativeRef: string,
  message: string,
  onEvents: TurnEventSink<E>,
  options: { handoff?: HandoffBlock; workspace?: string } = {}
) =>
  session.runTurn(
    {
      nativeRef,
      runId: makeId.run(),
      message,
      handoff: options.handoff ?? null,
      model: null,
      workspace: options.workspace ?? null
    },
    onEvents
  )

const turn = (
  session: ProviderSessionHandle,
  nativeRef: string,
  message: string,
  options: { handoff?: HandoffBlock; workspace?: string } = {}
) => TurnEvents.collect((onEvents) => runTurn(session, nativeRef, message, onEvents, options))

const replyOf = (events: ReadonlyArray<ProviderEvent>): string => {
  const replies = events.flatMap((e) => (e._tag === "Item" && e.item.type === "assistant_message" ? [e.item.text] : []))
  expect(replies).toHaveLength(1)
  return replies[0]!
}

const turnRefOf = (events: ReadonlyArray<ProviderEvent>): string => {
  const first = events[0]
  if (first?._tag !== "TurnStarted") throw new Error("the first event is not TurnStarted")
  return first.turnRef
}

const items = (events: ReadonlyArray<ProviderEvent>) => events.flatMap((e) => (e._tag === "Item" ? [e.item] : []))

describe("scripted adapter", () => {
  it("resolves the compiled scripted server", () => {
    expect(Fs.existsSync(scriptedServerPath())).toBe(true)
  })

  it.live("a plain turn answers ok: TurnStarted, the reply item, TurnCompleted", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const adapter = adapterWith(alphaCapabilities)
        expect(adapter.driver).toBe("scripted")
        expect(adapter.runtimeMode).toBe("default")
        const session = yield* adapter.openSession({ workspace: null })
        expect(session.pid).toBeGreaterThan(0)
        const { nativeRef, strength } = yield* session.startThread({ workspace: null, model: null })
        expect(strength).toBe("strong")
        const events = yield* turn(session, nativeRef, "hello there")
        expect(events.map((e) => e._tag)).toEqual(["TurnStarted", "Item", "TurnCompleted"])
        expect(replyOf(events)).toBe("ok")
        const last = events[2]
        expect(last?._tag === "TurnCompleted" && last.turnRef).toBe(turnRefOf(events))
        // Consecutive turns on one thread work right after the stream ended.
        const again = yield* turn(session, nativeRef, "again")
        expect(turnRefOf(again)).not.toBe(turnRefOf(events))
      })
    )
  )

  it.live("item directives: reason, cmd, write, plan, ask, decide, subagent", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const workspace = tempDir()
        Fs.writeFileSync(Path.join(workspace, "existing.txt"), "old")
        const session = yield* adapterWith(alphaCapabilities).openSession({ workspace })
        const { nativeRef } = yield* session.startThread({ workspace, model: null })
        const events = yield* turn(
          session,
          nativeRef,
          "[[reason:secret thoughts]] [[cmd:npm test:1]] [[write:src/new.ts:export const x = 1]] " +
            "[[write:existing.txt:new]] [[write:../escape.txt:nope]] [[plan:design;build]] [[ask:Ship it?]] " +
            "[[decide:use sqlite]] [[subagent:beta:review the tests]]",
          { workspace }
        )
        const got = items(events)
        expect(got[0]).toEqual({ type: "reasoning", text: "secret-sthguoht terces" })
        expect(got[1]).toEqual({ type: "command_execution", command: "npm test", exitCode: 1, output: "ran npm test" })
        expect(got[2]).toMatchObject({ type: "file_change", path: "src/new.ts", kind: "add" })
        expect(got[3]).toMatchObject({ type: "file_change", path: "existing.txt", kind: "modify" })
        expect(got[4]).toMatchObject({ type: "error", code: "write_rejected" })
        expect(got[5]).toEqual({
          type: "plan",
          steps: [
            { text: "design", status: "pending" },
            { text: "build", status: "pending" }
          ]
        })
        expect(got[6]).toMatchObject({ type: "approval_request", question: "Ship it?", status: "open" })
        expect(events).toContainEqual({ _tag: "SubagentRequested", provider: "beta", prompt: "review the tests" })
        expect(replyOf(events)).toBe("ok\ndecision: use sqlite")
        expect(Fs.readFileSync(Path.join(workspace, "src/new.ts"), "utf8")).toBe("export const x = 1")
        expect(Fs.readFileSync(Path.join(workspace, "existing.txt"), "utf8")).toBe("new")
        expect(Fs.existsSync(Path.join(workspace, "..", "escape.txt"))).toBe(false)

        const approval = got[6]
        if (approval?.type !== "approval_request") throw new Error("no approval")
        yield* session.respondApproval(nativeRef, approval.approvalId, "accept")
        const unknown = yield* Effect.flip(session.respondApproval(nativeRef, "apr_nope", "accept"))
        expect(unknown.kind).toBe("error")
      })
    )
  )

  it.live("recall: earlier turns and handoff blocks count, the current message does not", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const session = yield* adapterWith(alphaCapabilities).openSession({ workspace: null })
        const { nativeRef } = yield* session.startThread({ workspace: null, model: null })
        yield* turn(session, nativeRef, "the password is zebra")
        expect(replyOf(yield* turn(session, nativeRef, "[[recall:zebra]] [[recall:giraffe]] [[recall:Zebra]]"))).toBe(
          "ok\nrecall:zebra=yes\nrecall:giraffe=no\nrecall:Zebra=no"
        )
        // Asking earlier (and the earlier "=no" answer) does not teach the word.
        expect(replyOf(yield* turn(session, nativeRef, "[[recall:giraffe]]"))).toBe("ok\nrecall:giraffe=no")
        // The current message does not count, even when it contains the word.
        expect(replyOf(yield* turn(session, nativeRef, "koala [[recall:koala]]"))).toBe("ok\nrecall:koala=no")
        expect(replyOf(yield* turn(session, nativeRef, "[[recall:koala]]"))).toBe("ok\nrecall:koala=yes")

        // A fact known only from a handoff block: known with that message and afterwards.
        const other = yield* session.startThread({ workspace: null, model: null })
        expect(
          replyOf(
            yield* turn(session, other.nativeRef, "[[recall:walrus]] [[recall:zebra]]", {
              handoff: handoff("Decisions: the mascot is a walrus")
            })
          )
        ).toBe("ok\nrecall:walrus=yes\nrecall:zebra=no")
        expect(replyOf(yield* turn(session, other.nativeRef, "[[recall:walrus]]"))).toBe("ok\nrecall:walrus=yes")
      })
    )
  )

  it.live("[[fail]] fails the turn with kind error; the session goes on", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const session = yield* adapterWith(alphaCapabilities).openSession({ workspace: null })
        const { nativeRef } = yield* session.startThread({ workspace: null, model: null })
        const error = yield* Effect.flip(turn(session, nativeRef, "please [[fail]]"))
        expect(error._tag).toBe("ProviderFailure")
        expect(error.kind).toBe("error")
        expect(error.provider).toBe("alpha")
        expect(replyOf(yield* turn(session, nativeRef, "after"))).toBe("ok")
      })
    )
  )

  it.live("a native thread resumes in a new process after the first one was closed", () =>
    Effect.gen(function* () {
      const adapter = adapterWith(alphaCapabilities)
      const first = yield* Scope.make()
      const session1 = yield* Scope.extend(adapter.openSession({ workspace: null }), first)
      const { nativeRef } = yield* session1.startThread({ workspace: null, model: null })
      yield* turn(session1, nativeRef, "remember the otter")
      yield* Scope.close(first, Exit.void)
      expect(isAlive(session1.pid!)).toBe(false)

      yield* Effect.scoped(
        Effect.gen(function* () {
          const session2 = yield* adapter.openSession({ workspace: null })
          expect(session2.pid).not.toBe(session1.pid)
          // A thread must be made current in this process before it takes a turn.
          const notOpen = yield* Effect.flip(turn(session2, nativeRef, "[[recall:otter]]"))
          expect(notOpen.detail).toContain("resume")
          yield* session2.resumeThread(nativeRef)
          expect(replyOf(yield* turn(session2, nativeRef, "[[recall:otter]]"))).toBe("ok\nrecall:otter=yes")
        })
      )
    })
  )

  it.live("resuming a forgotten or unknown thread fails with resume_failed", () =>
    Effect.gen(function* () {
      const adapter = adapterWith(alphaCapabilities)
      const nativeRef = yield* Effect.scoped(
        Effect.gen(function* () {
          const session = yield* adapter.openSession({ workspace: null })
          const { nativeRef } = yield* session.startThread({ workspace: null, model: null })
          const events = yield* turn(session, nativeRef, "bye [[forget]]")
          expect(events.at(-1)?._tag).toBe("TurnCompleted")
          return nativeRef
        })
      )
      yield* Effect.scoped(
        Effect.gen(function* () {
          const session = yield* adapter.openSession({ workspace: null })
          const forgotten = yield* Effect.flip(session.resumeThread(nativeRef))
          expect(forgotten.kind).toBe("resume_failed")
          const unknown = yield* Effect.flip(session.resumeThread("sth_doesnotexist"))
          expect(unknown.kind).toBe("resume_failed")
          const traversal = yield* Effect.flip(session.resumeThread("../../etc/passwd"))
          expect(traversal.kind).toBe("resume_failed")
        })
      )
    })
  )

  it.live("fork at a turn keeps history up to and including that turn", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const session = yield* adapterWith(alphaCapabilities).openSession({ workspace: null })
        const { nativeRef } = yield* session.startThread({ workspace: null, model: null })
        const t1 = turnRefOf(yield* turn(session, nativeRef, "first fact: heron"))
        yield* turn(session, nativeRef, "second fact: ibis")
        const atT1 = yield* session.forkThread(nativeRef, t1)
        expect(atT1.nativeRef).not.toBe(nativeRef)
        expect(replyOf(yield* turn(session, atT1.nativeRef, "[[recall:heron]] [[recall:ibis]]"))).toBe(
          "ok\nrecall:heron=yes\nrecall:ibis=no"
        )
        const latest = yield* session.forkThread(nativeRef, null)
        expect(replyOf(yield* turn(session, latest.nativeRef, "[[recall:heron]] [[recall:ibis]]"))).toBe(
          "ok\nrecall:heron=yes\nrecall:ibis=yes"
        )
        // The source is untouched by its forks' turns.
        yield* turn(session, atT1.nativeRef, "fork-only fact: crane")
        expect(replyOf(yield* turn(session, nativeRef, "[[recall:crane]] [[recall:ibis]]"))).toBe(
          "ok\nrecall:crane=no\nrecall:ibis=yes"
        )
        const badTurn = yield* Effect.flip(session.forkThread(nativeRef, "stn_nope"))
        expect(badTurn.kind).toBe("error")
      })
    )
  )

  it.live("fork is refused per capability", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const beta = yield* adapterWith(betaCapabilities, tempDir(), "beta").openSession({ workspace: null })
        const b = yield* beta.startThread({ workspace: null, model: null })
        const t = turnRefOf(yield* turn(beta, b.nativeRef, "x"))
        expect((yield* Effect.flip(beta.forkThread(b.nativeRef, null))).kind).toBe("unsupported")
        expect((yield* Effect.flip(beta.forkThread(b.nativeRef, t))).kind).toBe("unsupported")

        const latestOnly = yield* adapterWith(defaultCapabilities({ fork: "latest" })).openSession({ workspace: null })
        const l = yield* latestOnly.startThread({ workspace: null, model: null })
        const lt = turnRefOf(yield* turn(latestOnly, l.nativeRef, "fact: puffin"))
        expect((yield* Effect.flip(latestOnly.forkThread(l.nativeRef, lt))).kind).toBe("unsupported")
        const forked = yield* latestOnly.forkThread(l.nativeRef, null)
        expect(replyOf(yield* turn(latestOnly, forked.nativeRef, "[[recall:puffin]]"))).toBe("ok\nrecall:puffin=yes")
      })
    )
  )

  it.live("rollback drops the turn and every later one; refused without the capability", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const session = yield* adapterWith(alphaCapabilities).openSession({ workspace: null })
        const { nativeRef } = yield* session.startThread({ workspace: null, model: null })
        yield* turn(session, nativeRef, "one: lynx")
        const t2 = turnRefOf(yield* turn(session, nativeRef, "two: puma"))
        yield* turn(session, nativeRef, "three: ocelot")
        yield* session.rollbackThread(nativeRef, t2)
        expect(replyOf(yield* turn(session, nativeRef, "[[recall:lynx]] [[recall:puma]] [[recall:ocelot]]"))).toBe(
          "ok\nrecall:lynx=yes\nrecall:puma=no\nrecall:ocelot=no"
        )
        expect((yield* Effect.flip(session.rollbackThread(nativeRef, t2))).kind).toBe("error")

        const beta = yield* adapterWith(betaCapabilities, tempDir(), "beta").openSession({ workspace: null })
        const b = yield* beta.startThread({ workspace: null, model: null })
        const bt = turnRefOf(yield* turn(beta, b.nativeRef, "x"))
        expect((yield* Effect.flip(beta.rollbackThread(b.nativeRef, bt))).kind).toBe("unsupported")
      })
    )
  )

  it.live("interrupting a [[sleep:10000]] turn ends it in well under a second", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const session = yield* adapterWith(alphaCapabilities).openSession({ workspace: null })
        const { nativeRef } = yield* session.startThread({ workspace: null, model: null })
        const turnStarted = yield* Deferred.make<void>()
        const seen: Array<ProviderEvent> = []
        const fiber = yield* runTurn(
          session,
          nativeRef,
          "napping lemur [[reason:before]] [[sleep:10000]] [[reason:after]]",
          (events) =>
            Effect.sync(() => {
              seen.push(...events)
              if (events.some((e) => e._tag === "TurnStarted")) Deferred.unsafeDone(turnStarted, Exit.void)
            })
        ).pipe(Effect.as(seen), Effect.fork)
        yield* Deferred.await(turnStarted)
        const started = Date.now()
        yield* session.interrupt(nativeRef)
        const events = yield* Fiber.join(fiber)
        expect(Date.now() - started).toBeLessThan(1000)
        expect(events.map((e) => e._tag)).toEqual(["TurnStarted", "Item", "TurnInterrupted"])
        expect(items(events)).toEqual([{ type: "reasoning", text: "secret-erofeb" }])
        // The interrupted turn is part of the native history.
        expect(replyOf(yield* turn(session, nativeRef, "[[recall:lemur]]"))).toBe("ok\nrecall:lemur=yes")
        // Uninterrupted, a sleep just delays the answer.
        const before = Date.now()
        expect(replyOf(yield* turn(session, nativeRef, "[[sleep:300]]"))).toBe("ok")
        expect(Date.now() - before).toBeGreaterThanOrEqual(290)
      })
    )
  )

  it.live("a caller that stops waiting for the turn (interrupts it) interrupts the provider turn", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const session = yield* adapterWith(alphaCapabilities).openSession({ workspace: null })
        const { nativeRef } = yield* session.startThread({ workspace: null, model: null })
        const started = Date.now()
        const turnStarted = yield* Deferred.make<void>()
        const fiber = yield* runTurn(session, nativeRef, "[[sleep:10000]]", (events) =>
          events.some((e) => e._tag === "TurnStarted") ? Deferred.succeed(turnStarted, undefined) : Effect.void
        ).pipe(Effect.fork)
        yield* Deferred.await(turnStarted)
        yield* Fiber.interrupt(fiber)
        // The next turn can start once the abandoned one was interrupted.
        let events: ReadonlyArray<ProviderEvent> = []
        for (let attempt = 0; attempt < 50; attempt++) {
          const result = yield* Effect.either(turn(session, nativeRef, "next"))
          if (result._tag === "Right") {
            events = result.right
            break
          }
          yield* Effect.sleep("20 millis")
        }
        expect(replyOf(events)).toBe("ok")
        expect(Date.now() - started).toBeLessThan(3000)
      })
    )
  )

  it.live("[[crash]] fails the turn with kind crash and `exited` resolves", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const session = yield* adapterWith(alphaCapabilities).openSession({ workspace: null })
        const { nativeRef } = yield* session.startThread({ workspace: null, model: null })
        const seen: Array<string> = []
        const error = yield* Effect.flip(
          runTurn(session, nativeRef, "[[crash]]", (events) =>
            Effect.sync(() => void seen.push(...events.map((e) => e._tag)))
          )
        )
        expect(seen).toEqual(["TurnStarted"])
        expect(error.kind).toBe("crash")
        expect(error.detail).toContain("code 70")
        expect(yield* session.exited).toEqual({ code: 70, signal: null })
        expect(isAlive(session.pid!)).toBe(false)
        const after = yield* Effect.flip(session.startThread({ workspace: null, model: null }))
        expect(after.kind).toBe("crash")
      })
    )
  )

  it.live("closing the scope leaves no process behind", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const session = yield* Scope.extend(adapterWith(alphaCapabilities).openSession({ workspace: null }), scope)
      const { nativeRef } = yield* session.startThread({ workspace: null, model: null })
      // Close while a turn is running: the turn's stream fails instead of hanging.
      const fiber = yield* Effect.fork(Effect.either(turn(session, nativeRef, "[[sleep:10000]]")))
      yield* Effect.sleep("200 millis")
      const pid = session.pid!
      expect(isAlive(pid)).toBe(true)
      yield* Scope.close(scope, Exit.void)
      expect(isAlive(pid)).toBe(false)
      const result = yield* Fiber.join(fiber).pipe(Effect.timeout("2 seconds"))
      expect(result._tag).toBe("Left")
    })
  )

  it.live("the scripted provider exits when its parent is SIGKILLed (stdin closes)", () =>
    Effect.gen(function* () {
      const stateDir = tempDir()
      // A parent process that starts the scripted provider and prints its pid.
      const parentScript = `
        const { spawn } = require("node:child_process")
        const child = spawn(process.execPath, [${JSON.stringify(scriptedServerPath())}, "--state-dir", ${JSON.stringify(stateDir)}, "--name", "orphan", "--capabilities", ${JSON.stringify(JSON.stringify(alphaCapabilities))}], { stdio: ["pipe", "ignore", "ignore"] })
        child.on("spawn", () => console.log(child.pid))
        setInterval(() => {}, 1000)`
      const parent = NodeChildProcess.spawn(process.execPath, ["-e", parentScript], {
        stdio: ["ignore", "pipe", "inherit"]
      })
      const childPid = yield* Effect.async<number>((resume) => {
        parent.stdout.once("data", (chunk: Buffer) => resume(Effect.succeed(Number(String(chunk).trim()))))
      }).pipe(Effect.timeout("10 seconds"))
      expect(isAlive(childPid)).toBe(true)
      parent.kill("SIGKILL")
      let gone = false
      // The provider may still be loading its modules; it sees EOF on stdin as soon as it reads.
      for (let i = 0; i < 750 && !gone; i++) {
        yield* Effect.sleep("20 millis")
        gone = !isAlive(childPid)
      }
      if (!gone) process.kill(childPid, "SIGKILL")
      expect(gone).toBe(true)
    })
  )

  it.live("summarise is deterministic, within budget, and refused without the capability", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const payload = {
          sections: [
            { kind: "goals" as const, title: "Goals", lines: ["ship the runtime"] },
            { kind: "decisions" as const, title: "Decisions", lines: ["use sqlite", "x".repeat(400)] }
          ],
          omitted: []
        }
        const able = yield* adapterWith(defaultCapabilities({ summarise: true })).openSession({ workspace: null })
        const text = yield* able.summarise({ payload, budgetTokens: 1000 })
        expect(text).toBe(
          `Summary by alpha:\nGoals:\n- ship the runtime\nDecisions:\n- use sqlite\n- ${"x".repeat(400)}`
        )
        const short = yield* able.summarise({ payload, budgetTokens: 20 })
        expect(short.length).toBeLessThanOrEqual(80)
        expect(short).toBe("Summary by alpha:\nGoals:\n- ship the runtime\nDecisions:\n- use sqlite")
        expect(yield* able.summarise({ payload, budgetTokens: 5 })).toBe("Summary by alpha:")
        const unable = yield* adapterWith(betaCapabilities).openSession({ workspace: null })
        expect((yield* Effect.flip(unable.summarise({ payload, budgetTokens: 1000 }))).kind).toBe("unsupported")
      })
    )
  )
})
