/**
 * The event store's one face: the log (EventLog.ts: append, receipts, reads, live
 * following), thread reads (ThreadReader.ts), lookups by key (Lookups.ts) and
 * maintenance (Maintenance.ts) and the runs queued (RunQueue.ts), over one connection (StoreDb.ts). Each role is its own module;
 * this one only wires them, so that consumers keep one service with every member.
 */
import { Context, Effect, Layer } from "effect"
import * as EventLog from "./EventLog.js"
import * as Followers from "./Followers.js"
import * as Lookups from "./Lookups.js"
import * as Maintenance from "./Maintenance.js"
import * as RunQueue from "./RunQueue.js"
import { StoreDb } from "./StoreDb.js"
import * as ThreadReader from "./ThreadReader.js"

export type { AppendInput, CommandReceipt, EventLogShape, StoredReceipt } from "./EventLog.js"
export type { LookupsShape } from "./Lookups.js"
export type { QueuedRequest, QueuedRun, RunQueueShape } from "./RunQueue.js"
export type { MaintenanceShape } from "./Maintenance.js"
export type { ThreadFilter, ThreadReaderShape } from "./ThreadReader.js"

export interface EventStoreShape
  extends EventLog.EventLogShape, ThreadReader.ThreadReaderShape, Maintenance.MaintenanceShape {
  /** Single rows by key, for lineage (cost independent of the thread's length). */
  readonly lookup: Lookups.LookupsShape
  /** Runs waiting for their thread (`whenBusy: queue`). */
  readonly queue: RunQueue.RunQueueShape
}

const make = Effect.gen(function* () {
  const direct = yield* StoreDb
  const log = yield* EventLog.make(direct, Followers.make())
  return EventStore.of({
    ...log,
    ...ThreadReader.make(direct.sql),
    ...Maintenance.make(direct.sql),
    lookup: Lookups.make(direct.sql),
    queue: RunQueue.make(direct)
  })
})

export class EventStore extends Context.Tag("@skein/runtime/EventStore")<EventStore, EventStoreShape>() {
  static readonly layer: Layer.Layer<EventStore, never, StoreDb> = Layer.scoped(EventStore, make)
}
