/**
 * A thread actor's runs in flight: launching a run's driver among the actor's drivers, and
 * ending a run that has no driver left to end it. The driver reports through the
 * actor's mailbox like any other sender; its exit reaches the actor as `DriverExited`
 * when the run's end was not recorded.
 */
import type { AppThread, ProviderName, Run, SkeinError, ThreadId } from "@skein/domain"
import { autonomyRefusal, defaultAutonomy } from "@skein/domain"
import { Effect, Exit, FiberSet, Ref } from "effect"
import type { SpawnInput } from "../../lineage/Spawn.js"
import * as Telemetry from "../../resources/Telemetry.js"
import { activeRun } from "../../store/ThreadState.js"
import { driveRun } from "../RunDriver.js"
import type { ThreadAsk } from "../ThreadProtocol.js"
import type { StartPlan } from "../ThreadPlanner.js"
import { planFinish } from "../ThreadPlanner.js"
import { checkpointsFor } from "./CheckpointHandlers.js"
import type { ActiveRun, ThreadContext } from "./ThreadContext.js"
import { currentIs, describeCause } from "./ThreadContext.js"

/** What launching a run needs beyond the handlers' shared context. */
export interface LaunchContext {
  /** The actor's own `ask`: the driver reports through it. */
  readonly ask: ThreadAsk
  /** Keeps the actor from passivating while a run is in flight, until the release it answers runs. */
  readonly retain: Effect.Effect<Effect.Effect<void>>
  readonly spawn: (input: SpawnInput) => Effect.Effect<{ readonly thread: AppThread; readonly run: Run }, SkeinError>
  /** The actor's drivers in flight (made with its first run, in its scope): interrupted when it closes. */
  readonly drivers: Effect.Effect<FiberSet.FiberSet<unknown, unknown>>
}

/**
 * Starts the run's driver on a fiber of the actor's drivers, on this stack until the
 * driver first waits (mostly, once its turn is written to the provider;
 * docs/decisions/0007-fork-now.md). The actor is retained before this returns (so that
 * it cannot passivate between the reply and the driver's start), and released when the
 * driver ends.
 */
export const launch = Effect.fnUntraced(function* (
  ctx: ThreadContext,
  launcher: LaunchContext,
  plan: StartPlan,
  control: ActiveRun
) {
  const runId = plan.run.id
  const workspace = ctx.cell.state().thread.workspace
  const release = yield* launcher.retain
  const start = yield* FiberSet.runtime(yield* launcher.drivers)()
  const drive = driveRun({
    run: plan.run,
    context: plan.context,
    workspace,
    sessions: ctx.sessions,
    ask: launcher.ask,
    checkpoint: checkpointsFor(ctx, workspace, plan.run.ordinal),
    gate: ctx.gate,
    spawn: (provider: ProviderName, prompt: string) =>
      Effect.zipRight(
        noFreerThan(ctx, plan.run.provider, provider),
        Effect.map(
          launcher.spawn({ parentThreadId: ctx.threadId, provider, prompt, createdBy: "agent" }),
          ({ run, thread }) => ({ threadId: thread.id, runId: run.id })
        )
      ),
    stop: control.stop,
    graceMs: ctx.config.interruptGraceMs,
    itemDelayMs: ctx.config.itemDelayMs
  })
  const adapter = ctx.sessions.adapters.find((a) => a.name === plan.run.provider)
  yield* drive.pipe(
    Telemetry.runSpan({
      run: plan.run,
      driver: adapter?.driver ?? null,
      model: plan.run.model ?? adapter?.model ?? null,
      sources: () => sourcesOf(ctx, runId)
    }),
    Effect.onExit((exit) =>
      Effect.flatMap(Ref.get(ctx.current), (current) => {
        // A run whose end is recorded is no longer current: nothing to tell.
        if (currentIs(current, runId) === null) return Effect.void
        const detail = Exit.isSuccess(exit) ? "it ended early" : describeCause(exit.cause)
        return Effect.ignore(launcher.ask("DriverExited", { runId, detail }))
      })
    ),
    Effect.ensuring(release),
    Effect.interruptible,
    // Started on this stack: the turn is on its way to the provider before the reply.
    (driver) => Effect.sync(() => start(driver))
  )
})

/** The other threads the run's context came from: the sources of the transfers its start consumed. */
const sourcesOf = (ctx: ThreadContext, runId: Run["id"]): ReadonlyArray<ThreadId> => [
  ...new Set(
    [...ctx.cell.state().transfers.values()]
      .filter((t) => t.consumedByRunId === runId && t.sourceThreadId !== ctx.threadId)
      .map((t) => t.sourceThreadId)
  )
]

/** A subagent the run's agent asks for may not act more freely than that agent (domain `autonomyRefusal`). */
const noFreerThan = (ctx: ThreadContext, parent: ProviderName, child: ProviderName) =>
  Effect.suspend(() => {
    const autonomyOf = (name: string) => ({
      provider: name,
      autonomy: ctx.sessions.adapters.find((a) => a.name === name)?.autonomy ?? defaultAutonomy
    })
    const refused = autonomyRefusal(autonomyOf(parent), autonomyOf(child))
    return refused === undefined ? Effect.void : Effect.fail(refused)
  })

/**
 * A run left active with no driver to end it (its driver died with a previous
 * incarnation of this actor, or its end could not be recorded): end it now.
 */
export const endOrphan = Effect.fnUntraced(function* (ctx: ThreadContext, why: string) {
  const active = activeRun(ctx.cell.state())
  const current = yield* Ref.get(ctx.current)
  if (active !== undefined && current !== null && current.runId === active.id && !current.driverExited) return
  yield* Ref.set(ctx.current, null)
  if (active === undefined) return
  const at = ctx.cell.now()
  const events = yield* ctx.cell.demand((s) =>
    planFinish(s, {
      runId: active.id,
      outcome: "failed",
      failure: { reason: "runtime_error", message: why },
      turnRef: null,
      now: at
    })
  )
  yield* ctx.cell.commit(events)
})
