/** Read models returned by queries. */
import { Schema } from "effect"
import { ProviderCapabilities } from "./Capabilities.js"
import { Checkpoint } from "./Checkpoint.js"
import { ContextHandoff } from "./Handoff.js"
import { ProviderThread } from "./ProviderThread.js"
import { ProviderSession } from "./ProviderSession.js"
import { Run } from "./Run.js"
import { AppThread } from "./Thread.js"
import { ContextTransfer } from "./Transfer.js"
import { TurnItem } from "./TurnItem.js"

export const RunView = Schema.extend(Run, Schema.Struct({ items: Schema.Array(TurnItem) }))
export type RunView = typeof RunView.Type

export const ThreadView = Schema.Struct({
  thread: AppThread,
  runs: Schema.Array(RunView),
  providerThreads: Schema.Array(ProviderThread),
  /** Transfers in which this thread is the source or the target. */
  transfers: Schema.Array(ContextTransfer),
  handoffs: Schema.Array(ContextHandoff),
  checkpoints: Schema.Array(Checkpoint),
  /** Threads made from this one: forks (side chats among them) and subagent children. */
  children: Schema.Array(AppThread)
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
  sessions: Schema.Array(ProviderSession),
  binary: Schema.optional(ProviderBinaryInfo)
})
export type ProviderInstanceInfo = typeof ProviderInstanceInfo.Type
