/**
 * `skein demo`: the seed example end to end, offline. Two scripted provider instances
 * with Codex-like and Claude-like profiles, the runtime in-process on a SQLite file
 * in a temporary directory: runs 1-5 on codex, 6-8 on claude, 9 on codex. It prints
 * the runs, the coverage table and the handoffs, and fails if the coverage is not
 * the seed's (C1 native 1-5,9 with H2(6-8); L1 native 6-8 with H1(1-5)).
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { claudeLikeCapabilities, codexLikeCapabilities, makeScriptedAdapter } from "@skein/adapters"
import {
  InvalidInput,
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
import { assistantReply, coverageLines, handoffLines, runLine } from "./Presentation.js"

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
        yield* orchestrator.shutdown
        const ok = matchesSeed(view)
        if (options.json) {
          yield* Console.log(
            JSON.stringify({ ok, coverage: coverageSummary(view), thread: Schema.encodeSync(ThreadViewSchema)(view) })
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
              ok ? "seed check: ok" : "seed check: FAILED (coverage differs from the seed example)"
            ].join("\n")
          )
        }
        if (!ok) {
          return yield* new InvalidInput({
            detail: `the demo's coverage ${JSON.stringify(coverageSummary(view))} is not the seed's`
          })
        }
      }).pipe(
        Effect.provide(
          makeRuntimeLayer({ dbPath: Path.join(dir, "skein.db") }).pipe(Layer.provide(demoRegistryLayer(dir)))
        )
      )
    ),
    Effect.scoped
  )
