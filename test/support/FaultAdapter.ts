/**
 * A test-only provider behind the real port, that misbehaves on request. Each session
 * owns a real child process (an idle Node program), so "its process exits" is a real
 * exit and leftovers can be checked by PID.
 *
 * Arm one fault at a time: at a port method (or a point in a turn), a mode:
 * - `fail`: a typed ProviderFailure (kind `error`);
 * - `die`: a defect: thrown before an Effect is even returned, or a dying stream;
 * - `hang`: the call never answers (the stream goes silent);
 * - `exit`: the session's process is SIGKILLed and the call never answers.
 * A fault fires once, then the adapter behaves again.
 *
 * Turns: TurnStarted, an assistant item, then by message: `[[approve]]` waits for an
 * approval decision; `[[wait]]` waits for an interrupt; then TurnCompleted.
 */
import type {
  ApprovalDecision,
  NativeThreadHandle,
  ProviderAdapter,
  ProviderEvent,
  ProviderName,
  ProviderSessionHandle
} from "@skein/domain"
import { ApprovalId, ProviderCapabilities, ProviderFailure } from "@skein/domain"
import { Deferred, Effect, FiberId, Stream } from "effect"
import { spawn } from "node:child_process"
import { TurnEvents } from "@skein/adapters"

export const faultPoints = [
  "openSession",
  "startThread",
  "resumeThread",
  "forkThread",
  "rollbackThread",
  "runTurn:first",
  "runTurn:mid",
  "interrupt",
  "respondApproval",
  "summarise"
] as const
export type FaultPoint = (typeof faultPoints)[number]

export const faultModes = ["fail", "die", "hang", "exit"] as const
export type FaultMode = (typeof faultModes)[number]

export interface FaultPlan {
  /** The fault that fires at the next call of `point`. */
  arm: (point: FaultPoint, mode: FaultMode) => void
  /** Faults that fired, in order. */
  readonly fired: Array<`${FaultPoint}/${FaultMode}`>
  /** Every child process any session of this adapter started. */
  readonly pids: Set<number>
}

export const makeFaultPlan = (): FaultPlan & { take: (point: FaultPoint) => FaultMode | undefined } => {
  let armed: { point: FaultPoint; mode: FaultMode } | undefined
  const fired: FaultPlan["fired"] = []
  return {
    arm: (point, mode) => void (armed = { point, mode }),
    fired,
    pids: new Set(),
    take: (point) => {
      if (armed === undefined || armed.point !== point) return undefined
      const { mode } = armed
      armed = undefined
      fired.push(`${point}/${mode}`)
      return mode
    }
  }
}

interface NativeThread {
  turns: number
  interrupt: Deferred.Deferred<void> | undefined
  approvals: Map<string, Deferred.Deferred<ApprovalDecision>>
}

export const makeFaultAdapter = (name: string, plan: ReturnType<typeof makeFaultPlan>): ProviderAdapter => {
  const provider = name as ProviderName
  // Native threads outlive sessions, as a real provider's do on disk.
  const threads = new Map<string, NativeThread>()
  let nextRef = 0
  const failure = (point: string) =>
    new ProviderFailure({ provider: name, kind: "error", detail: `injected failure at ${point}` })
  const defect = (point: string) => new Error(`injected defect at ${point}`)

  const openSession: ProviderAdapter["openSession"] = ({ workspace: _workspace }) => {
    const mode = plan.take("openSession")
    if (mode === "die") throw defect("openSession")
    return Effect.gen(function* () {
      const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1 << 30)"], { stdio: "ignore" })
      const pid = child.pid!
      plan.pids.add(pid)
      const exited = yield* Deferred.make<{ readonly code: number | null; readonly signal: string | null }>()
      child.on("exit", (code, signal) => Deferred.unsafeDone(exited, Effect.succeed({ code, signal })))
      yield* Effect.addFinalizer(() =>
        Effect.suspend(() => {
          if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
          return Deferred.await(exited)
        })
      )
      const kill = Effect.sync(() => void child.kill("SIGKILL"))

      /** The effect a fault turns a call into, or undefined to behave. */
      const fault = (point: FaultPoint): Effect.Effect<never, ProviderFailure> | undefined => {
        const m = plan.take(point)
        switch (m) {
          case undefined:
            return undefined
          case "fail":
            return Effect.fail(failure(point))
          case "die":
            throw defect(point)
          case "hang":
            return Effect.never
          case "exit":
            return Effect.zipRight(kill, Effect.never)
        }
      }
      const faultStream = (point: FaultPoint): Stream.Stream<never, ProviderFailure> => {
        const m = plan.take(point)
        switch (m) {
          case undefined:
            return Stream.empty
          case "fail":
            return Stream.fail(failure(point))
          case "die":
            return Stream.die(defect(point))
          case "hang":
            return Stream.never
          case "exit":
            return Stream.fromEffect(kill).pipe(Stream.drain, Stream.concat(Stream.never))
        }
      }
      const thread = (nativeRef: string) => {
        const found = threads.get(nativeRef)
        return found
          ? Effect.succeed(found)
          : Effect.fail(
              new ProviderFailure({ provider: name, kind: "resume_failed", detail: `no thread ${nativeRef}` })
            )
      }
      const strong = (nativeRef: string): NativeThreadHandle => ({ nativeRef, strength: "strong" })

      if (mode === "fail") return yield* Effect.fail(failure("openSession"))
      if (mode === "hang") return yield* Effect.never
      if (mode === "exit") return yield* Effect.zipRight(kill, Effect.never)

      const handle: ProviderSessionHandle = {
        pid,
        startThread: () =>
          fault("startThread") ??
          Effect.sync(() => {
            const nativeRef = `fth_${++nextRef}`
            threads.set(nativeRef, { turns: 0, interrupt: undefined, approvals: new Map() })
            return strong(nativeRef)
          }),
        resumeThread: (nativeRef) => fault("resumeThread") ?? Effect.asVoid(thread(nativeRef)),
        forkThread: (nativeRef) =>
          fault("forkThread") ??
          Effect.map(thread(nativeRef), (t) => {
            const forked = `fth_${++nextRef}`
            threads.set(forked, { turns: t.turns, interrupt: undefined, approvals: new Map() })
            return strong(forked)
          }),
        rollbackThread: (nativeRef) => fault("rollbackThread") ?? Effect.asVoid(thread(nativeRef)),
        runTurn: (input, onEvents) => {
          const first = plan.take("runTurn:first")
          if (first === "die") throw defect("runTurn:first")
          const before: Stream.Stream<never, ProviderFailure> =
            first === undefined
              ? Stream.empty
              : first === "fail"
                ? Stream.fail(failure("runTurn:first"))
                : first === "hang"
                  ? Stream.never
                  : Stream.fromEffect(kill).pipe(Stream.drain, Stream.concat(Stream.never))
          const events = Stream.unwrap(
            Effect.map(thread(input.nativeRef), (t): Stream.Stream<ProviderEvent, ProviderFailure> => {
              const turnRef = `${input.nativeRef}/t${++t.turns}`
              const waits: Array<Stream.Stream<ProviderEvent, ProviderFailure>> = []
              if (input.message.includes("[[approve]]")) {
                const approvalId = ApprovalId.make(`apr_${input.runId}`)
                const decided = Deferred.unsafeMake<ApprovalDecision>(FiberId.none)
                t.approvals.set(approvalId, decided)
                waits.push(
                  Stream.fromIterable<ProviderEvent>([
                    { _tag: "Item", item: { type: "approval_request", approvalId, question: "May I?", status: "open" } }
                  ]),
                  Stream.fromEffect(Deferred.await(decided)).pipe(
                    Stream.map((decision): ProviderEvent => ({
                      _tag: "Item",
                      item: { type: "assistant_message", text: `approval: ${decision}` }
                    }))
                  )
                )
              }
              let interrupted = false
              if (input.message.includes("[[wait]]")) {
                const stop = Deferred.unsafeMake<void>(FiberId.none)
                t.interrupt = stop
                waits.push(
                  Stream.fromEffect(Deferred.await(stop)).pipe(
                    Stream.tap(() => Effect.sync(() => void (interrupted = true))),
                    Stream.drain
                  )
                )
              }
              return before.pipe(
                Stream.concat(
                  Stream.fromIterable<ProviderEvent>([
                    { _tag: "TurnStarted", turnRef },
                    { _tag: "Item", item: { type: "assistant_message", text: "ok" } }
                  ])
                ),
                Stream.concat(faultStream("runTurn:mid")),
                Stream.concat(
                  waits.reduce<Stream.Stream<ProviderEvent, ProviderFailure>>(
                    (all, wait) => Stream.concat(all, wait),
                    Stream.empty
                  )
                ),
                Stream.concat(
                  Stream.suspend(() =>
                    Stream.fromIterable<ProviderEvent>([
                      interrupted ? { _tag: "TurnInterrupted", turnRef } : { _tag: "TurnCompleted", turnRef }
                    ])
                  )
                )
              )
            })
          )
          return TurnEvents.fromStream(events, onEvents)
        },
        interrupt: (nativeRef) =>
          fault("interrupt") ??
          Effect.flatMap(thread(nativeRef), (t) =>
            t.interrupt ? Deferred.succeed(t.interrupt, undefined) : Effect.void
          ),
        respondApproval: (nativeRef, approvalId, decision) =>
          fault("respondApproval") ??
          Effect.flatMap(thread(nativeRef), (t) => {
            const waiting = t.approvals.get(approvalId)
            return waiting
              ? Deferred.succeed(waiting, decision)
              : Effect.fail(new ProviderFailure({ provider: name, kind: "error", detail: `no approval ${approvalId}` }))
          }),
        summarise: () => fault("summarise") ?? Effect.succeed(`# Summary by ${name}\nAll earlier runs, in brief.`),
        exited: Deferred.await(exited)
      }
      return handle
    })
  }

  return {
    name: provider,
    driver: "fault",
    capabilities: ProviderCapabilities.make({
      resume: true,
      fork: "at_turn",
      rollback: "native",
      handoffDelivery: ["developer"],
      contextWindowTokens: 200_000,
      summarise: true
    }),
    runtimeMode: "default",
    model: null,
    openSession
  }
}
