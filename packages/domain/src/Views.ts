/** Read models returned by queries. */
import { Schema } from "effect"
import { ProviderCapabilities } from "./Capabilities.js"
import { Autonomy } from "./Autonomy.js"
import { Checkpoint, RestoreOutcome } from "./Checkpoint.js"
import { ContextHandoff } from "./Handoff.js"
import { ProviderThread } from "./ProviderThread.js"
import { ProviderSession } from "./ProviderSession.js"
import { Run } from "./Run.js"
import { AppThread } from "./Thread.js"
import { ContextTransfer } from "./Transfer.js"
import { TurnItem } from "./TurnItem.js"

/**
 * A run with its turn items. The user's message is the run's `message` (once): the
 * `user_message` item that repeats it in the log is not among `items`.
 */
export const RunView = Schema.extend(Run, Schema.Struct({ items: Schema.Array(TurnItem) }))
export type RunView = typeof RunView.Type

/**
 * A window of a thread's runs, by ordinal (ordinals are contiguous from 1, so one is a
 * stable cursor): the runs after `after`, or else the newest before `before` (the
 * newest of all without either), at most `limit`, in ascending order.
 */
export const RunWindow = Schema.Struct({
  after: Schema.optional(Schema.Int.pipe(Schema.nonNegative())),
  before: Schema.optional(Schema.Int.pipe(Schema.positive())),
  limit: Schema.Int.pipe(Schema.between(1, 1_000))
})
export type RunWindow = typeof RunWindow.Type

/** What `thread.get` may be asked for beyond the thread: a window of runs, and whether runs carry their items. */
export const ThreadViewOptions = Schema.Struct({
  /** Without it, every run (the whole-thread view). */
  runs: Schema.optional(RunWindow),
  /** Each run's turn items (default true). */
  items: Schema.optional(Schema.Boolean)
})
export type ThreadViewOptions = typeof ThreadViewOptions.Type

/**
 * Which part of the thread a paged view holds: runs `from`..`to` (none when from > to)
 * of `runCount`. Entities of a run (its handoffs, its checkpoints, the transfers it
 * consumed) come with its page; a provider thread comes when it served a run of the
 * page or is still usable, with its per-run lists (native runs and turns) cut to the page.
 */
export const ThreadPage = Schema.Struct({
  runCount: Schema.Int.pipe(Schema.nonNegative()),
  from: Schema.Int.pipe(Schema.positive()),
  to: Schema.Int.pipe(Schema.nonNegative()),
  items: Schema.Boolean,
  /** The thread's last event when the page was read: `thread.events` from it brings what changed since. */
  sequence: Schema.Int.pipe(Schema.nonNegative())
})
export type ThreadPage = typeof ThreadPage.Type

export const ThreadView = Schema.Struct({
  thread: AppThread,
  runs: Schema.Array(RunView),
  providerThreads: Schema.Array(ProviderThread),
  /** Transfers in which this thread is the source or the target. */
  transfers: Schema.Array(ContextTransfer),
  handoffs: Schema.Array(ContextHandoff),
  checkpoints: Schema.Array(Checkpoint),
  /** Threads made from this one: forks (side chats among them) and subagent children. */
  children: Schema.Array(AppThread),
  /** Runs queued on the thread (`whenBusy: queue`), the next first; absent when none is. */
  queued: Schema.optional(Schema.Array(Run)),
  /** Present when the view is a window of the runs (see `ThreadViewOptions.runs`). */
  page: Schema.optional(ThreadPage)
})
export type ThreadView = typeof ThreadView.Type

/**
 * The agent executable behind an instance, for drivers that run one: where it was
 * found, the version it reports, and whether Skein can use it (if not, `problem`
 * says what to install or change).
 */
export const ProviderBinaryInfo = Schema.Struct({
  path: Schema.NullOr(Schema.String),
  version: Schema.NullOr(Schema.String),
  usable: Schema.Boolean,
  problem: Schema.NullOr(Schema.String)
})
export type ProviderBinaryInfo = typeof ProviderBinaryInfo.Type

export const ProviderInstanceInfo = Schema.Struct({
  name: Schema.String,
  driver: Schema.String,
  model: Schema.NullOr(Schema.String),
  capabilities: ProviderCapabilities,
  /** How freely its agent acts; a subagent an agent starts may not act more freely. */
  autonomy: Autonomy,
  sessions: Schema.Array(ProviderSession),
  binary: Schema.optional(ProviderBinaryInfo)
})
export type ProviderInstanceInfo = typeof ProviderInstanceInfo.Type

/** What `thread.rollback` answers: the thread as it now is and, with `restoreFiles`, what the restore did (or would do). */
export const RollbackView = Schema.extend(ThreadView, Schema.Struct({ restore: Schema.optional(RestoreOutcome) }))
export type RollbackView = typeof RollbackView.Type
