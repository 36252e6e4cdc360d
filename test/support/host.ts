/**
 * A runtime host in its own process, for crash tests: opens the runtime on the
 * database in argv[2], creates a thread, starts a long run, prints one JSON line with
 * the thread, run and process ids, then waits to be killed. With argv[3] = "fork" it
 * instead completes one run, forks the thread, prints the fork's ids and waits. With
 * argv[3] = "agent", argv[4] a provider config file and argv[5] an instance of it, on
 * `agent.db` in that directory: one run completes, then a slow one starts, and the line
 * is printed once it is running (the test waits for its request at the mock model).
 * With argv[3] = "queue": a long run starts and three more are queued behind it (with
 * command ids `cmd_queue_1` … `cmd_queue_3`); the line holds their run ids.
 */
import type { ProviderName } from "@skein/domain"
import { Effect } from "effect"
import { withRuntime } from "./runtime.js"

const dir = process.argv[2]!
const mode = process.argv[3] ?? "run"
const forkThenWait = () =>
  withRuntime(dir, (o) =>
    Effect.gen(function* () {
      const thread = yield* o.createThread({ title: "source" })
      yield* o.startRun({
        threadId: thread.id,
        provider: "alpha" as ProviderName,
        message: "the word is QUINCE",
        wait: true
      })
      const { thread: fork, transfer } = yield* o.forkThread({
        sourceThreadId: thread.id,
        sourcePoint: "latest_stable",
        commandId: "cmd_host_fork" as never
      })
      process.stdout.write(
        JSON.stringify({ threadId: thread.id, forkId: fork.id, transferId: transfer.id, pid: process.pid }) + "\n"
      )
      yield* Effect.never
    })
  )
const agentTurnThenWait = (configFile: string, provider: ProviderName) =>
  withRuntime(
    dir,
    (o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({ workspace: dir })
        yield* o.startRun({ threadId: thread.id, provider, message: "the bird is ROBIN", wait: true })
        const run = yield* o.startRun({ threadId: thread.id, provider, message: "slowly [[slow:30000]]" })
        process.stdout.write(JSON.stringify({ threadId: thread.id, runId: run.id, pid: process.pid }) + "\n")
        yield* Effect.never
      }),
    { configFile, dbName: "agent.db" }
  )
const queueThenWait = () =>
  withRuntime(dir, (o) =>
    Effect.gen(function* () {
      const thread = yield* o.createThread({ title: "queue" })
      const running = yield* o.startRun({
        threadId: thread.id,
        provider: "alpha" as ProviderName,
        message: "long [[sleep:60000]]"
      })
      const queued: Array<string> = []
      for (const n of [1, 2, 3]) {
        const run = yield* o.startRun({
          threadId: thread.id,
          provider: (n === 2 ? "beta" : "alpha") as ProviderName,
          message: `queued ${n}`,
          whenBusy: "queue",
          commandId: `cmd_queue_${n}` as never
        })
        queued.push(run.id)
      }
      process.stdout.write(JSON.stringify({ threadId: thread.id, runId: running.id, queued, pid: process.pid }) + "\n")
      yield* Effect.never
    })
  )
if (mode === "fork") await forkThenWait()
else if (mode === "queue") await queueThenWait()
else if (mode === "agent") await agentTurnThenWait(process.argv[4]!, process.argv[5]! as ProviderName)
else
  await withRuntime(dir, (o) =>
    Effect.gen(function* () {
      const thread = yield* o.createThread({ title: "crash", commandId: "cmd_host_create" as never })
      const run = yield* o.startRun({
        threadId: thread.id,
        provider: "alpha" as ProviderName,
        message: "long [[sleep:60000]]",
        commandId: "cmd_host_run" as never
      })
      // Wait (bounded) until the turn has reached the provider process.
      let providerPid: number | null = null
      for (let i = 0; i < 100 && providerPid === null; i++) {
        yield* Effect.sleep("100 millis")
        const view = yield* o.getThread(thread.id)
        const started = view.providerThreads.some((pt) => pt.nativeRef !== null)
        const providers = yield* o.listProviders
        if (started) providerPid = providers.find((p) => p.name === "alpha")?.sessions[0]?.pid ?? null
      }
      yield* Effect.sleep("200 millis")
      process.stdout.write(JSON.stringify({ threadId: thread.id, runId: run.id, pid: process.pid, providerPid }) + "\n")
      yield* Effect.never
    })
  )
