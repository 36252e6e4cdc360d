/**
 * What a thread actor's handler groups share: the state cell, the services, the
 * checkpoint gate and the run in flight. Each group (runs, approvals, checkpoints,
 * lineage) is a table of handlers made once, each given this context (with what else
 * its group needs) beside its message; the actor wires them.
 * Everything here is written only by the actor's handlers, on its one worker, except
 * `childrenMayReturn.mark`, a hint anyone may raise (see `ChildrenHint`).
 */
import type { CommandId, ProviderAdapter, RunFailure, RunId, ThreadId } from "@skein/domain"
import { Cause, Option } from "effect"
import type { Deferred, Ref } from "effect"
import type { RuntimeOptions } from "../../RuntimeConfig.js"
import type { WorkspaceCheckpointsShape } from "../../lineage/WorkspaceCheckpoints.js"
import type { EventStoreShape } from "../../store/EventStore.js"
import type { CheckpointGate } from "../CheckpointGate.js"
import type { ProviderSessionsShape } from "../ProviderSessions.js"
import type { RunContext } from "../ThreadProtocol.js"
import type { ProviderInfo } from "../ThreadPlanner.js"
import type { ThreadCell } from "./ThreadCell.js"

/** The run in flight: what its driver was given, and how to stop it. */
export interface ActiveRun {
  readonly runId: RunId
  readonly context: RunContext
  /**
   * Completed with the failure to record when the run must stop; with null by the driver
   * once the run's end is known, when nothing is left to stop (`run/RunStop.ts`).
   */
  readonly stop: Deferred.Deferred<RunFailure | null>
  /** The run.interrupt command whose receipt the run's end carries. */
  readonly stopCommandId: CommandId | null
  /** Its driver fiber has ended (told by `DriverExited`), whether or not its FinishRun got through. */
  readonly driverExited: boolean
}

/**
 * Whether a subagent child of this thread may have a result its log does not hold yet,
 * so that a run start must look in storage. Raised when the actor starts or restarts
 * and when a child is spawned (from the spawning fiber: a one-way "look again");
 * lowered only by a run start whose look found no child waiting.
 */
export interface ChildrenHint {
  readonly get: () => boolean
  readonly mark: () => void
  readonly clear: () => void
}

export const childrenHint = (): ChildrenHint => new Hint()

/** Methods on a prototype; `mark` is bound, since it is handed on (`ThreadActor.childSpawned`). */
class Hint implements ChildrenHint {
  private may = true
  get(): boolean {
    return this.may
  }
  readonly mark = (): void => {
    this.may = true
  }
  clear(): void {
    this.may = false
  }
}

export interface ThreadContext {
  readonly threadId: ThreadId
  readonly cell: ThreadCell
  readonly store: EventStoreShape
  readonly sessions: ProviderSessionsShape
  readonly config: RuntimeOptions
  readonly checkpoints: WorkspaceCheckpointsShape
  readonly gate: CheckpointGate
  /** The run in flight, or null. */
  readonly current: Ref.Ref<ActiveRun | null>
}

/** What a handler that needs only the shared context is given with its message. */
export interface ThreadParts {
  readonly ctx: ThreadContext
}

/** The run in flight if it is `runId`, else null. */
export const currentIs = (current: ActiveRun | null, runId: RunId): ActiveRun | null =>
  current !== null && current.runId === runId ? current : null

export const infoOf = (adapter: ProviderAdapter): ProviderInfo => ({
  name: adapter.name,
  driver: adapter.driver,
  capabilities: adapter.capabilities,
  runtimeMode: adapter.runtimeMode,
  model: adapter.model
})

/** Undefined for an instance no longer configured. */
export const capabilitiesOf = (sessions: ProviderSessionsShape, name: string) =>
  sessions.adapters.find((a) => a.name === name)?.capabilities

/** One line for a log or a record: the failure or defect, not a stack. */
export const describeCause = (cause: Cause.Cause<unknown>): string => {
  const failure = Option.orElse(Cause.failureOption(cause), () => Cause.dieOption(cause))
  const value = Option.getOrUndefined(failure)
  const text =
    value instanceof Error
      ? `${(value as { _tag?: string })._tag ?? value.name}: ${value.message}`
      : value !== undefined
        ? String(value)
        : Cause.isInterruptedOnly(cause)
          ? "interrupted"
          : Cause.pretty(cause)
  return text.length > 400 ? `${text.slice(0, 399)}…` : text
}
