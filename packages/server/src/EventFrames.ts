/**
 * The `Chunk` frames of `thread.events`, built once per commit: a live commit reaches
 * every follower of its thread as the same batch, so its events are encoded once, and
 * its frame once per request id; followers that use the same id share the frame (and
 * its bytes). Batches are held weakly: a frame lives as long as its batch.
 */
import type { StoredEvent } from "@skein/domain"
import { storedEventJson } from "@skein/runtime"
import { FanOutFrame } from "./ConnectionOutput.js"

export type EventFrames = (requestId: string, events: ReadonlyArray<StoredEvent>) => FanOutFrame

export const makeEventFrames = (): EventFrames => {
  const batches = new WeakMap<
    ReadonlyArray<StoredEvent>,
    { readonly values: string; readonly frames: Map<string, FanOutFrame> }
  >()
  return (requestId, events) => {
    let batch = batches.get(events)
    if (batch === undefined) {
      const values = events.map(storedEventJson).join(",")
      batch = { values, frames: new Map() }
      batches.set(events, batch)
    }
    let frame = batch.frames.get(requestId)
    if (frame === undefined) {
      frame = new FanOutFrame(`{"_tag":"Chunk","requestId":${JSON.stringify(requestId)},"values":[${batch.values}]}`)
      batch.frames.set(requestId, frame)
    }
    return frame
  }
}
