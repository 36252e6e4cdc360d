/**
 * The run path side by side, each side a runtime of its own with the scripted providers
 * and its WebSocket server on 127.0.0.1, in this process:
 * - dispatch: `run.start` (the Orchestrator's startRun) until the provider process
 *   reports it received the turn, on a thread of one run (a new thread, its first run,
 *   then the run measured), as actors.ts measures it; p50 and p99;
 * - actor round trip: a cheap command through the thread's actor and back, the
 *   Orchestrator's interruptRun on an idle thread (answered NoActiveRun by the actor);
 * - RPC round trip: thread.get of a thread of three runs over the WebSocket, typed
 *   client to server and back; p50 and p99.
 * Beside dispatch, no goal: the 95% bootstrap interval of its p50 ratio (samples paired
 * by their place in the alternating blocks), what one dispatch sample allocates
 * (allocation.ts), which is what the young generation is scavenged for, and the fibers
 * it starts and the tasks it hands Effect's scheduler (structure.ts).
 * Both sides first run WARM_SAMPLES dispatch samples each (V8 compiles the run path a
 * function at a time as each gets hot; see actors.ts), then each figure is taken in
 * blocks, the sides alternating block by block and which goes first alternating too.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { ProviderName, ThreadId } from "@skein/domain"
import type { Effect as EffectType } from "effect"
import { allocatedPer } from "./allocation.js"
import { type Figure, format } from "./sideTable.js"
import { inTurn, openRuntime, scaled, type Side, watchTurns } from "./sides.js"
import { bootstrapInterval, nowMs, percentile } from "./stats.js"
import { type Structure, structureOf } from "./structure.js"

const WARM_SAMPLES = scaled(1000)
const DISPATCH_SAMPLES = scaled(400, 20)
const DISPATCH_BLOCK = 20
/** Dispatch samples a side whose allocations are counted (after the timed ones). */
const ALLOCATION_SAMPLES = scaled(200, 10)
/** Dispatch samples a side whose fibers and scheduler tasks are counted (after the allocations). */
const STRUCTURE_SAMPLES = scaled(200, 10)
const ACTOR_CALLS = scaled(20_000, 1000)
const ACTOR_BLOCK = 1000
const RPC_CALLS = scaled(4000, 200)
const RPC_BLOCK = 200

const alpha = "alpha" as ProviderName

/** A side's runtime, server and client, with the operations measured. */
const openRunSide = async (side: Side, dir: string) => {
  const { E } = side
  const { Effect, Exit, Scope } = E
  Fs.mkdirSync(dir, { recursive: true })
  /** When the provider process reported receiving each run's turn (epoch ms). */
  const received = new Map<string, number>()
  const managed = openRuntime(side, dir, {
    mapAdapter: watchTurns(side, (input, events) => {
      for (const event of events) {
        if (event._tag === "TurnStarted" && event.receivedAt !== undefined) received.set(input.runId, event.receivedAt)
      }
    })
  })
  const o = await managed.runPromise(side.runtime.Orchestrator)
  const scope = await managed.runPromise(Scope.make())
  const server = await managed.runPromise(Scope.extend(side.server.serveWebSocket({ port: 0 }), scope))
  const client = await managed.runPromise(Scope.extend(side.server.makeSkeinClient({ url: server.url }), scope))
  const run = (threadId: ThreadId, message: string) => o.startRun({ threadId, provider: alpha, message, wait: true })

  /** One dispatch sample: a new thread, its first run, then the run measured (ms; NaN if the turn was not seen). */
  const dispatchSample = Effect.gen(function* () {
    const thread = yield* o.createThread({})
    yield* run(thread.id, "first")
    const t0 = nowMs()
    const measured = yield* run(thread.id, "bench")
    const at = received.get(measured.id)
    received.clear()
    return at === undefined ? Number.NaN : at - t0
  })
  /** `count` calls of `call`, each timed (ms). */
  const timed = <A, Err>(count: number, call: EffectType.Effect<A, Err>) =>
    Effect.gen(function* () {
      const times: Array<number> = []
      for (let i = 0; i < count; i++) {
        const t0 = performance.now()
        yield* call
        times.push(performance.now() - t0)
      }
      return times
    })

  const idle = await managed.runPromise(o.createThread({ title: "idle" }))
  const interruptIdle = Effect.flip(o.interruptRun({ threadId: idle.id })).pipe(
    Effect.flatMap((error) =>
      error._tag === "NoActiveRun" ? Effect.void : Effect.dieMessage(`${side.label}: interruptRun failed ${error._tag}`)
    )
  )
  const viewed = await managed.runPromise(o.createThread({ title: "viewed" }))
  for (let i = 0; i < 3; i++) await managed.runPromise(run(viewed.id, `warm ${i}`))
  const getView = client.thread.get({ threadId: viewed.id })

  return {
    dispatch: (count: number) =>
      managed.runPromise(Effect.forEach(Array.from({ length: count }), () => dispatchSample)),
    actor: (count: number) => managed.runPromise(timed(count, interruptIdle)),
    rpc: (count: number) => managed.runPromise(timed(count, getView)),
    close: async () => {
      await managed.runPromise(Scope.close(scope, Exit.void))
      await managed.dispose()
    }
  }
}

type RunSide = Awaited<ReturnType<typeof openRunSide>>

/** `total` samples a side, in blocks of `block`, the sides taking turns. */
const alternate = async (
  runSides: readonly [RunSide, RunSide],
  sides: readonly [Side, Side],
  total: number,
  block: number,
  sample: (runSide: RunSide, count: number) => Promise<Array<number>>
) => {
  const samples: [Array<number>, Array<number>] = [[], []]
  for (let b = 0; b * block < total; b++) {
    const count = Math.min(block, total - b * block)
    await inTurn(sides, b, async (_, i) => void samples[i].push(...(await sample(runSides[i], count))))
  }
  return samples.map((xs) => xs.filter((x) => !Number.isNaN(x))) as [Array<number>, Array<number>]
}

const us = (x: number) => format("µs", x)
const kb = (bytes: number) => `${(bytes / 1024).toFixed(0)} KB`
const p = percentile
/** The 95% bootstrap interval of after's p50 over before's, resampling pairs of samples at the same place. */
const p50RatioInterval = ([before, after]: readonly [ReadonlyArray<number>, ReadonlyArray<number>]) => {
  const pairs = Array.from({ length: Math.min(before.length, after.length) }, (_, i) => i)
  const p50At = (xs: ReadonlyArray<number>, picked: ReadonlyArray<number>) => {
    const resampled = picked.map((i) => xs[i]!)
    return p(resampled, 50)
  }
  const [low, high] = bootstrapInterval(pairs, (picked) => p50At(after, picked) / p50At(before, picked))
  return `${low.toFixed(2)}-${high.toFixed(2)}x`
}
/** The 5th, 25th and 75th percentiles, in ms: whether a side is shifted throughout or only spread wider. */
const spread = (xs: ReadonlyArray<number>) => [5, 25, 75].map((at) => p(xs, at).toFixed(2)).join(", ") + " ms"

export const runPath = async (sides: readonly [Side, Side], dir: string): Promise<Array<Figure>> => {
  const runSides: Array<RunSide> = []
  try {
    for (const side of sides) runSides.push(await openRunSide(side, Path.join(dir, `runs-${side.label}`)))
    const both = runSides as unknown as readonly [RunSide, RunSide]
    await alternate(both, sides, WARM_SAMPLES, 100, (s, n) => s.dispatch(n))
    const dispatch = await alternate(both, sides, DISPATCH_SAMPLES, DISPATCH_BLOCK, (s, n) => s.dispatch(n))
    const allocated: Array<number> = []
    for (const [i, runSide] of both.entries())
      allocated[i] = await allocatedPer(ALLOCATION_SAMPLES, () => runSide.dispatch(1))
    const structure: Array<Structure> = []
    for (const [i, runSide] of both.entries())
      structure[i] = await structureOf(sides[i]!.E, STRUCTURE_SAMPLES, () => runSide.dispatch(1))
    await alternate(both, sides, ACTOR_BLOCK, ACTOR_BLOCK, (s, n) => s.actor(n))
    const actor = await alternate(both, sides, ACTOR_CALLS, ACTOR_BLOCK, (s, n) => s.actor(n))
    await alternate(both, sides, RPC_BLOCK, RPC_BLOCK, (s, n) => s.rpc(n))
    const rpc = await alternate(both, sides, RPC_CALLS, RPC_BLOCK, (s, n) => s.rpc(n))
    const of = (samples: [Array<number>, Array<number>], at: number) => ({
      before: p(samples[0], at),
      after: p(samples[1], at)
    })
    return [
      {
        name: "dispatch p50 (run.start -> provider has the turn)",
        ...of(dispatch, 50),
        unit: "ms",
        detail:
          `dispatch: ${dispatch[0].length} and ${dispatch[1].length} runs on threads of one run, blocks of ` +
          `${DISPATCH_BLOCK}, after ${WARM_SAMPLES} such samples a side (scripted provider); ` +
          `p50 ratio's 95% bootstrap interval ${p50RatioInterval(dispatch)}; ` +
          `p5, p25, p75 before ${spread(dispatch[0])}, after ${spread(dispatch[1])}; allocated a sample ` +
          `(a new thread, its first run and the measured one; ${ALLOCATION_SAMPLES} samples a side) ` +
          `before ${kb(allocated[0]!)}, after ${kb(allocated[1]!)}; fibers started a sample before ` +
          `${structure[0]!.fibers.toFixed(1)}, after ${structure[1]!.fibers.toFixed(1)}, tasks handed to ` +
          `Effect's scheduler before ${structure[0]!.tasks.toFixed(1)}, after ${structure[1]!.tasks.toFixed(1)} ` +
          `(${STRUCTURE_SAMPLES} samples a side, structure.ts)`
      },
      { name: "dispatch p99", ...of(dispatch, 99), unit: "ms" },
      {
        name: "actor round trip p50 (interruptRun on an idle thread)",
        ...of(actor, 50),
        unit: "µs",
        detail: `actor round trip: ${ACTOR_CALLS.toLocaleString("en-US")} calls a side, p99 before ${us(p(actor[0], 99))}, after ${us(p(actor[1], 99))}`
      },
      {
        name: "RPC round trip p50 (thread.get over WebSocket)",
        ...of(rpc, 50),
        unit: "µs",
        detail: `RPC round trip: ${RPC_CALLS.toLocaleString("en-US")} calls a side of thread.get (3 runs), typed client on 127.0.0.1`
      },
      { name: "RPC round trip p99", ...of(rpc, 99), unit: "µs" }
    ]
  } finally {
    for (const runSide of runSides) await runSide.close()
  }
}
