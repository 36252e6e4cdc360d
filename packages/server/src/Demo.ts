/**
 * `skein demo`: the seed example end to end, offline. Two scripted provider instances
 * with Codex-like and Claude-like profiles, the runtime in-process on a SQLite file
 * in a temporary directory: runs 1-5 on codex, 6-8 on claude, 9 on codex. It prints
 * the runs, the coverage table and the handoffs, and fails if the coverage is not
 * the seed's (C1 native 1-5,9 with H2(6-8); L1 native 6-8 with H1(1-5)). Then a
 * lineage part: a fork, a merge-back, a subagent, a rollback, and the lineage tree.
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { claudeLikeCapabilities, codexLikeCapabilities, makeScriptedAdapter } from "@skein/adapters"
import {
  InvalidInput,
  type SkeinError,
  ProviderName,
  ProviderRegistry,
  type RunView,
  type StartRunFields,
  type ThreadId,
  type ThreadView,
  ThreadView as ThreadViewSchema
} from "@skein/domain"
import { makeRuntimeLayer, Orchestrator } from "@skein/runtime"
import { Console, Effect, Layer, Schema } from "effect"
import { assistantReply, coverageLines, handoffLines, runLine, treeLines } from "./Presentation.js"
import type { LineageNode } from "./Presentation.js"

/** The seed's nine user messages and the instance each goes to. */
export const seedScript: ReadonlyArray<{ readonly provider: "codex" | "claude"; readonly message: string }> = [
  { provider: "codex", message: "[[plan:design the schema;write the store;test it]] Plan a todo store." },
  { provider: "codex", message: "[[decide:persist todos in sqlite]] Pick the storage." },
  { provider: "codex", message: "[[cmd:npm test:1]] Run the tests." },
  { provider: "codex", message: "[[reason:the test fails on ordering]] Why does it fail?" },
  { provider: "codex", message: "[[cmd:npm test:0]] Fix the ordering and rerun." },
  { provider: "claude", message: "[[recall:sqlite]] Review the store design." },
  { provider: "claude", message: "[[decide:add an index on due date]] Suggest one improvement." },
  { provider: "claude", message: "[[cmd:npm run lint:0]] Lint the code." },
  { provider: "codex", message: "[[recall:index]] Implement the reviewer's suggestion." }
]

export interface CoverageSummary {
  readonly provider: string
  readonly native: ReadonlyArray<number>
  readonly handoffs: ReadonlyArray<{ readonly strategy: string; readonly from: number; readonly to: number }>
}

/** The coverage of each provider thread, in creation order, with each handoff's strategy and runs. */
export const coverageSummary = (view: ThreadView): ReadonlyArray<CoverageSummary> => {
  const handoffs = new Map(view.handoffs.map((h) => [h.id as string, h]))
  return [...view.providerThreads]
    .sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0))
    .map((pt) => ({
      provider: pt.provider,
      native: pt.coverage.nativeRunOrdinals,
      handoffs: pt.coverage.handoffIds.flatMap((id) => {
        const h = handoffs.get(id)
        return h === undefined
          ? []
          : [{ strategy: h.strategy, from: h.coveredRunOrdinals.from, to: h.coveredRunOrdinals.to }]
      })
    }))
}

/** What the seed example must come out as. */
export const seedExpectedCoverage: ReadonlyArray<CoverageSummary> = [
  {
    provider: "codex",
    native: [1, 2, 3, 4, 5, 9],
    handoffs: [{ strategy: "delta_since_target_last_seen", from: 6, to: 8 }]
  },
  { provider: "claude", native: [6, 7, 8], handoffs: [{ strategy: "full_thread_summary", from: 1, to: 5 }] }
]

export const matchesSeed = (view: ThreadView): boolean =>
  JSON.stringify(coverageSummary(view)) === JSON.stringify(seedExpectedCoverage)

/** Drives the nine seed runs on a thread through any `run.start` (in-process or over RPC). */
export const driveSeed = <E>(
  threadId: ThreadId,
  startRun: (input: Schema.Struct.Type<typeof StartRunFields>) => Effect.Effect<RunView, E>
): Effect.Effect<ReadonlyArray<RunView>, E> =>
  Effect.forEach(seedScript, (step) =>
    startRun({ threadId, provider: ProviderName.make(step.provider), message: step.message, wait: true })
  )

/** The demo's two scripted instances, keeping their native threads under `dataDir`. */
export const demoRegistryLayer = (dataDir: string): Layer.Layer<ProviderRegistry> =>
  Layer.succeed(ProviderRegistry, {
    adapters: [
      makeScriptedAdapter({
        name: ProviderName.make("codex"),
        capabilities: codexLikeCapabilities,
        stateDir: Path.join(dataDir, "providers", "codex")
      }),
      makeScriptedAdapter({
        name: ProviderName.make("claude"),
        capabilities: claudeLikeCapabilities,
        stateDir: Path.join(dataDir, "providers", "claude")
      })
    ]
  })

/**
 * The lineage part, after the seed: fork the seed thread at run 1 and work in the
 * fork on claude, merge it back; a subagent on claude; the seed thread's next run on
 * codex takes both in; then that run is rolled back, and the tree is printed.
 */
const driveLineage = (orchestrator: Orchestrator["Type"], seed: ThreadView) =>
  Effect.gen(function* () {
    const lines: Array<string> = []
    const seedId = seed.thread.id
    const codex = ProviderName.make("codex")
    const claude = ProviderName.make("claude")
    const { thread: fork } = yield* orchestrator.forkThread({
      sourceThreadId: seedId,
      sourcePoint: { runId: seed.runs[0]!.id },
      title: "try a log instead"
    })
    lines.push(`forked ${fork.id} at run 1 (nothing resolved yet: no session, no summary)`)
    const inFork = yield* orchestrator.startRun({
      threadId: fork.id,
      provider: claude,
      message: "[[recall:sqlite]] [[decide:use an append-only log]] Explore an alternative to the plan.",
      wait: true
    })
    const forkView = yield* orchestrator.getThread(fork.id)
    const forkTransfer = forkView.transfers.find((t) => t.type === "fork")
    lines.push(
      `fork run 1 on claude: ${inFork.contextResolution} (transfer ${forkTransfer?.status}); ${(assistantReply(inFork).match(/recall:\S+=(?:yes|no)/g) ?? []).join(" ")} (run 2 chose sqlite; the fork starts at run 1)`
    )
    const merge = yield* orchestrator.mergeBack({ forkThreadId: fork.id })
    lines.push(`merge-back ${merge.id}: ${merge.status} into the seed thread`)
    const { run: childRun, thread: child } = yield* orchestrator.spawnSubagent({
      parentThreadId: seedId,
      provider: claude,
      prompt: "[[decide:cap lists at 500 todos]] Check the limits."
    })
    yield* waitForEnd(orchestrator, child.id, childRun.id)
    lines.push(`subagent ${child.id} on claude: finished`)
    const together = yield* orchestrator.startRun({
      threadId: seedId,
      provider: codex,
      message: "[[recall:append-only]] [[recall:500]] Bring the fork and the subagent's findings together.",
      wait: true
    })
    const recalls = assistantReply(together).match(/recall:\S+=(?:yes|no)/g) ?? []
    const brought = together.items.filter((i) => i.type === "handoff_context").length
    lines.push(`seed run 10 on codex took in ${brought} handoff(s): ${recalls.join(" ")}`)
    const rolled = yield* orchestrator.rollback({ threadId: seedId, toRunOrdinal: 9 })
    lines.push(`rolled back to run 9: run 10 is ${rolled.runs[9]?.status}`)
    const load = (threadId: ThreadId): Effect.Effect<LineageNode, SkeinError> =>
      Effect.gen(function* () {
        const view = yield* orchestrator.getThread(threadId)
        return { view, children: yield* Effect.forEach(view.children, (c) => load(c.id)) }
      })
    const tree = treeLines(yield* load(seedId))
    const ok =
      inFork.contextResolution === "portable" &&
      assistantReply(inFork).includes("recall:sqlite=no") &&
      recalls.join(" ") === "recall:append-only=yes recall:500=yes" &&
      rolled.runs[9]?.status === "rolled_back"
    return { ok, lines, tree }
  })

const waitForEnd = (orchestrator: Orchestrator["Type"], threadId: ThreadId, runId: string) =>
  Effect.gen(function* () {
    for (let i = 0; i < 1000; i++) {
      const run = (yield* orchestrator.getThread(threadId)).runs.find((r) => r.id === runId)
      if (run !== undefined && run.status !== "running" && run.status !== "queued") return run
      yield* Effect.sleep("10 millis")
    }
    return yield* new InvalidInput({ detail: `run ${runId} did not end within 10 s` })
  })

export const runDemo = (options: { readonly json: boolean }) =>
  Effect.acquireRelease(
    Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "skein-demo-"))),
    (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
  ).pipe(
    Effect.flatMap((dir) =>
      Effect.gen(function* () {
        const orchestrator = yield* Orchestrator
        const thread = yield* orchestrator.createThread({ title: "seed example: codex, claude, codex" })
        if (!options.json) {
          yield* Console.log(`skein demo: offline, scripted instances codex and claude, SQLite in ${dir}`)
        }
        yield* driveSeed(thread.id, orchestrator.startRun)
        const view = yield* orchestrator.getThread(thread.id)
        const ok = matchesSeed(view)
        const lineage = yield* driveLineage(orchestrator, view)
        yield* orchestrator.shutdown
        if (options.json) {
          yield* Console.log(
            JSON.stringify({
              ok: ok && lineage.ok,
              coverage: coverageSummary(view),
              thread: Schema.encodeSync(ThreadViewSchema)(view),
              lineage: { ok: lineage.ok, tree: lineage.tree }
            })
          )
        } else {
          yield* Console.log(
            [
              ...view.runs.flatMap((run) => {
                const recall = assistantReply(run).match(/recall:\S+=(?:yes|no)/g)
                return [runLine(view, run), ...(recall === null ? [] : [`    reply: ${recall.join(" ")}`])]
              }),
              "",
              "coverage:",
              ...coverageLines(view),
              "",
              "handoffs:",
              ...handoffLines(view),
              "",
              ok ? "seed check: ok" : "seed check: FAILED (coverage differs from the seed example)",
              "",
              "lineage:",
              ...lineage.lines.map((l) => `  ${l}`),
              "",
              "tree:",
              ...lineage.tree,
              "",
              lineage.ok ? "lineage check: ok" : "lineage check: FAILED"
            ].join("\n")
          )
        }
        if (!ok) {
          return yield* new InvalidInput({
            detail: `the demo's coverage ${JSON.stringify(coverageSummary(view))} is not the seed's`
          })
        }
        if (!lineage.ok)
          return yield* new InvalidInput({ detail: `the demo's lineage part failed: ${lineage.lines.join("; ")}` })
      }).pipe(
        Effect.provide(
          makeRuntimeLayer({ dbPath: Path.join(dir, "skein.db") }).pipe(Layer.provide(demoRegistryLayer(dir)))
        )
      )
    ),
    Effect.scoped
  )
