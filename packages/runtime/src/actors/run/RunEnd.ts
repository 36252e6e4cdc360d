/**
 * A run's end as its `FinishRun` says it, decided from plain data: how the turn ended
 * (the turn's end event or the provider call's exit), whether the run was asked to
 * stop, and what the turn reported on the way. Pure: the driver gathers the facts and
 * records what this returns, once.
 *
 * - A completed turn ends `completed`, even when a stop came after it ended.
 * - A turn that ended interrupted, or failed once a stop was asked for (killing the
 *   process to enforce a stop is not a provider failure), ends as the stop says:
 *   `interrupted` for the user's interrupt or shutdown, `failed` for anything else.
 * - A provider call's failure ends `failed` with a reason naming the fault
 *   (`failureOf`); a defect in the driver ends `failed` with `runtime_error`.
 * - A driver interrupted from outside (its actor is closing) records nothing.
 */
import type { Rpc } from "@effect/rpc"
import type { ProviderFailure, RunFailure, RunId, SkeinError, TurnItemContent, TurnUsage } from "@skein/domain"
import { Cause, Exit, Option } from "effect"
import type { FinishRun, RunOutcome } from "../ThreadProtocol.js"

/** How a turn that reached its end ended, as the provider said (a call that returned is `completed`). */
export type TurnOutcome = "completed" | "interrupted"

/** How the driver learnt of the turn's end: its outcome, or why the call failed. */
export type TurnExit = Exit.Exit<TurnOutcome, ProviderFailure | SkeinError>

/** What the turn reported on the way, as the run's end stores it. */
export interface TurnReport {
  /** The provider's handle of the turn, once it said. */
  readonly turnRef: string | null
  /** The outcome its end event gave (`completed` until one says otherwise). */
  readonly outcome: TurnOutcome
  /** What the turn cost, as the provider reported it with the turn's end. */
  readonly usage: TurnUsage | undefined
  /** How the provider took a stop, when it did not simply stop (said with the run's failure). */
  readonly stopNote: string | null
}

export const emptyReport: TurnReport = { turnRef: null, outcome: "completed", usage: undefined, stopNote: null }

export type FinishPayload = Rpc.Payload<typeof FinishRun>

/** Everything the run's end is decided from. */
export interface EndFacts {
  readonly runId: RunId
  readonly exit: TurnExit
  /** The failure the run was stopped with, if a stop was asked for. */
  readonly stopped: RunFailure | null
  readonly report: TurnReport
  /** Items held back for the run's end (they go in its commit). */
  readonly held: ReadonlyArray<TurnItemContent>
  /** Said on the run when its completed turn could not be checkpointed. */
  readonly checkpointNote: TurnItemContent | null
  /** `pending` when a completed turn's git checkpoint is to be taken next. */
  readonly checkpoint: "pending" | null
}

/**
 * A stop that is not a failure of the run: it ends `interrupted`, anything else `failed`.
 * `runner_lost` here: its thread moved to another runner of a cluster.
 */
export const isInterruption = (failure: RunFailure): boolean =>
  failure.reason === "user_interrupt" || failure.reason === "shutdown" || failure.reason === "runner_lost"

/** The run's failure for a provider's typed failure (its kind), or for any other error of the runtime. */
export const failureOf = (error: ProviderFailure | SkeinError): RunFailure => {
  if (error._tag !== "ProviderFailure") return { reason: "runtime_error", message: error.message }
  switch (error.kind) {
    case "crash":
      return { reason: "provider_crash", message: error.message }
    case "timeout":
      return { reason: "provider_timeout", message: error.message }
    case "defect":
      return { reason: "provider_defect", message: error.message }
    case "resume_failed":
      return { reason: "resume_failed", message: error.message }
    default:
      return { reason: "provider_error", message: error.message }
  }
}

const defaultInterrupt: RunFailure = { reason: "user_interrupt", message: "The run was interrupted" }

/** The outcome and failure of the run, or None when nobody is left to record it. */
const verdictOf = (
  exit: TurnExit,
  stopped: RunFailure | null
): Option.Option<{ readonly outcome: RunOutcome; readonly failure: RunFailure | null }> => {
  const asStopped = (failure: RunFailure) =>
    Option.some({ outcome: isInterruption(failure) ? ("interrupted" as const) : ("failed" as const), failure })
  if (Exit.isSuccess(exit)) {
    return exit.value === "completed"
      ? Option.some({ outcome: "completed" as const, failure: null })
      : asStopped(stopped ?? defaultInterrupt)
  }
  if (stopped !== null) return asStopped(stopped)
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure)) return Option.some({ outcome: "failed" as const, failure: failureOf(failure.value) })
  const defect = Cause.dieOption(exit.cause)
  if (Option.isSome(defect)) {
    const message = `the run's driver died: ${String(defect.value)}`
    return Option.some({ outcome: "failed" as const, failure: { reason: "runtime_error", message } })
  }
  return Option.none()
}

/** The one `FinishRun` the run ends with, from the facts of its end (None: interrupted from outside). */
export const finishOf = (facts: EndFacts): Option.Option<FinishPayload> =>
  Option.map(verdictOf(facts.exit, facts.stopped), ({ failure, outcome }) => {
    const { stopNote, turnRef, usage } = facts.report
    return {
      runId: facts.runId,
      outcome,
      failure: failure && stopNote ? { ...failure, message: `${failure.message}; ${stopNote}` } : failure,
      turnRef,
      ...(usage === undefined ? {} : { usage }),
      items: facts.checkpointNote === null ? facts.held : [...facts.held, facts.checkpointNote],
      checkpoint: outcome === "completed" ? facts.checkpoint : null
    }
  })
