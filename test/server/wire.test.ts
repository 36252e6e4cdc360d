/**
 * What the server puts on the wire, against the real runtime: every answer is exactly
 * what the method's schema makes of the value in-process (the server sends a success
 * whose schema transforms nothing without encoding it, so a field the runtime carried
 * beyond the schema would show here), and a request under way can be interrupted,
 * answered once, over a raw socket and through the typed client.
 */
import * as Path from "node:path"
import { Rpc } from "@effect/rpc"
import { describe, expect, it } from "@effect/vitest"
import { ProviderName, SkeinRpcs } from "@skein/domain"
import type { ThreadId } from "@skein/domain"
import { makeRuntimeLayer, Orchestrator } from "@skein/runtime"
import { demoRegistryLayer, driveSeed, makeSkeinClient, serveWebSocket } from "@skein/server"
import { Context, Effect, Exit, Fiber, Layer, Schema } from "effect"
import { rawExchange, requestFrame, tempDir } from "./support.js"

const codex = ProviderName.make("codex")
const claude = ProviderName.make("claude")

const withRuntimeAndServer = Effect.gen(function* () {
  const dir = tempDir("skein-wire-")
  const runtime = yield* Layer.build(
    makeRuntimeLayer({ dbPath: Path.join(dir, "skein.db") }).pipe(Layer.provide(demoRegistryLayer(dir)))
  )
  const server = yield* serveWebSocket({ port: 0 }).pipe(Effect.provide(runtime))
  return { orchestrator: Context.get(runtime, Orchestrator), url: server.url }
})

/** The value of the method's success as its exit schema puts it on the wire. */
const encodedSuccess = (tag: string, value: unknown): unknown => {
  const rpc = SkeinRpcs.requests.get(tag as never)! as unknown as Rpc.Any
  const exit = Schema.encodeSync(Rpc.exitSchema(rpc) as unknown as Schema.Schema<unknown, unknown, never>)(
    Exit.succeed(value)
  ) as { readonly value: unknown }
  return exit.value
}

/** Waits (5 s at most) until the thread's first run is no longer running. */
const untilFirstRunEnds = (o: Orchestrator["Type"], threadId: ThreadId) =>
  Effect.gen(function* () {
    for (let i = 0; i < 250; i++) {
      const status = (yield* o.getThread(threadId)).runs[0]?.status
      if (status !== "running" && status !== "queued") return
      yield* Effect.sleep("20 millis")
    }
  })

/** One request over a raw socket, and its answer's exit. */
const rawCall = (url: string, tag: string, payload: unknown) =>
  Effect.promise(() => rawExchange(url, [requestFrame("1", tag, payload)], 1)).pipe(
    Effect.map((replies) => {
      expect(replies).toHaveLength(1)
      expect(replies[0]).toMatchObject({ _tag: "Exit", requestId: "1" })
      return replies[0].exit as { readonly _tag: string; readonly value?: unknown }
    })
  )

describe("the wire", () => {
  it.live(
    "carries every answer exactly as its schema encodes the value in-process, for threads with every kind of entity",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const { orchestrator: o, url } = yield* withRuntimeAndServer
          const seed = yield* o.createThread({ title: "wire" })
          yield* driveSeed(seed.id, o.startRun)
          // Items of every kind the scripted provider reports, an approval answered, a
          // provider-run child agent.
          const busy = yield* o.startRun({
            threadId: seed.id,
            provider: claude,
            message:
              "[[reason:think]] [[cmd:echo hi:0]] [[plan:one;two]] [[ask:may I?]] [[child:look around]] [[decide:go]] busy",
            wait: true
          })
          const approval = busy.items.find((i) => i.type === "approval_request")
          if (approval?.type !== "approval_request") throw new Error("no approval request")
          yield* o.respondApproval({ threadId: seed.id, approvalId: approval.approvalId, decision: "accept" })
          const { thread: fork } = yield* o.forkThread({ sourceThreadId: seed.id, sourcePoint: "latest_stable" })
          yield* o.startRun({
            threadId: fork.id,
            provider: codex,
            message: "[[recall:sqlite]] in the fork",
            wait: true
          })
          yield* o.mergeBack({ forkThreadId: fork.id })
          const { thread: child } = yield* o.spawnSubagent({ parentThreadId: seed.id, provider: codex, prompt: "help" })
          const last = yield* o.startRun({ threadId: seed.id, provider: codex, message: "together", wait: true })
          yield* o.rollback({ threadId: seed.id, toRunOrdinal: last.ordinal - 1 })

          const threads: ReadonlyArray<ThreadId> = [seed.id, fork.id, child.id]
          for (const threadId of threads) {
            for (const options of [{}, { runs: { after: 2, limit: 3 } }, { runs: { limit: 2 }, items: false }]) {
              const payload = { threadId, ...options }
              const wire = yield* rawCall(url, "thread.get", payload)
              expect(wire._tag).toBe("Success")
              const view = yield* o.getThread(threadId, options)
              expect(wire.value).toStrictEqual(encodedSuccess("thread.get", view))
            }
          }
          const view = yield* o.getThread(seed.id)
          expect(view.handoffs.length).toBeGreaterThan(0)
          // The fork, the subagent, and the child agent the provider ran itself.
          expect(view.children.length).toBe(3)
          for (const handoff of view.handoffs) {
            const wire = yield* rawCall(url, "handoff.get", { handoffId: handoff.id })
            expect(wire.value).toStrictEqual(encodedSuccess("handoff.get", yield* o.getHandoff(handoff.id)))
          }
          const listed = yield* rawCall(url, "thread.list", { rootThreadId: seed.id })
          expect(listed.value).toStrictEqual(
            encodedSuccess("thread.list", yield* o.listThreads({ rootThreadId: seed.id }))
          )
          const transfers = yield* rawCall(url, "transfer.list", { rootThreadId: seed.id })
          expect(transfers.value).toStrictEqual(
            encodedSuccess("transfer.list", yield* o.listTransfers({ rootThreadId: seed.id }))
          )
          const providers = yield* rawCall(url, "provider.list", undefined)
          expect(providers.value).toStrictEqual(encodedSuccess("provider.list", yield* o.listProviders))
          // A run as run.start answers it, items and all.
          const started = yield* rawCall(url, "run.start", {
            threadId: seed.id,
            provider: claude,
            message: "[[cmd:echo again:0]] once more",
            wait: true
          })
          const run = (yield* o.getThread(seed.id)).runs.at(-1)!
          expect(started.value).toStrictEqual(encodedSuccess("run.start", run))
        })
      ),
    120_000
  )

  it.live(
    "a request under way is interrupted by its client: answered once, as interrupted; its id is free again; the run goes on",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const { orchestrator: o, url } = yield* withRuntimeAndServer
          const thread = yield* o.createThread({ title: "interrupt" })
          const replies = yield* Effect.promise(async () => {
            const { WebSocket } = await import("ws")
            const ws = new WebSocket(url)
            const received: Array<any> = []
            await new Promise((resolve, reject) => {
              ws.on("open", resolve)
              ws.on("error", reject)
            })
            ws.on("message", (data) => received.push(JSON.parse(String(data))))
            const until = async (check: () => boolean) => {
              for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 10))
            }
            const payload = { threadId: thread.id, provider: codex, message: "[[sleep:800]] slow", wait: true }
            ws.send(requestFrame("5", "run.start", payload))
            await new Promise((r) => setTimeout(r, 150))
            ws.send(JSON.stringify({ _tag: "Interrupt", requestId: "5" }))
            await until(() => received.length >= 1)
            // The same id again: a new request, served (the first run is still active).
            ws.send(requestFrame("5", "thread.get", { threadId: thread.id, items: false }))
            await until(() => received.length >= 2)
            // Nothing more comes for the interrupted request once its run ends.
            await new Promise((r) => setTimeout(r, 1000))
            ws.close()
            return received
          })
          expect(replies).toHaveLength(2)
          expect(replies[0]).toMatchObject({
            _tag: "Exit",
            requestId: "5",
            exit: { _tag: "Failure", cause: { _tag: "Interrupt" } }
          })
          expect(replies[1]).toMatchObject({ _tag: "Exit", requestId: "5", exit: { _tag: "Success" } })
          yield* untilFirstRunEnds(o, thread.id)
          expect((yield* o.getThread(thread.id)).runs.map((r) => r.status)).toEqual(["completed"])
        })
      ),
    60_000
  )

  it.live(
    "the typed client interrupts a call it no longer waits for, and the connection serves the next one",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const { orchestrator: o, url } = yield* withRuntimeAndServer
          const client = yield* makeSkeinClient({ url })
          const thread = yield* client.thread.create({ title: "typed interrupt" })
          const waiting = yield* Effect.fork(
            client.run.start({ threadId: thread.id, provider: codex, message: "[[sleep:600]] slow", wait: true })
          )
          yield* Effect.sleep("150 millis")
          const exit = yield* Fiber.interrupt(waiting)
          expect(Exit.isInterrupted(exit)).toBe(true)
          const view = yield* client.thread.get({ threadId: thread.id })
          expect(view.runs).toHaveLength(1)
          // The run was not stopped by the interrupted wait.
          yield* untilFirstRunEnds(o, thread.id)
          expect((yield* client.thread.get({ threadId: thread.id })).runs[0]!.status).toBe("completed")
        })
      ),
    60_000
  )
})
