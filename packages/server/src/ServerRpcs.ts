/**
 * The contract as the server encodes it. Identical on the wire to `SkeinRpcs`; the
 * one difference is that `thread.events` encodes each stored event once: a live event
 * reaches every follower of a thread as the same object, so its encoding is memoised
 * per object instead of being redone for each subscriber.
 */
import { RpcSchema } from "@effect/rpc"
import { SkeinError, SkeinRpcs, StoredEvent } from "@skein/domain"
import { ParseResult, Schema } from "effect"

const encodeStoredEvent = Schema.encodeSync(StoredEvent)
const encoded = new WeakMap<StoredEvent, typeof StoredEvent.Encoded>()

/** The encoded form of a stored event, computed once per event object. */
export const encodeSharedStoredEvent = (event: StoredEvent): typeof StoredEvent.Encoded => {
  let json = encoded.get(event)
  if (json === undefined) {
    json = encodeStoredEvent(event)
    encoded.set(event, json)
  }
  return json
}

/** `StoredEvent` with a memoised encoding (decoding is the domain schema's). */
export const SharedStoredEvent: Schema.Schema<StoredEvent, typeof StoredEvent.Encoded> = Schema.transformOrFail(
  Schema.encodedSchema(StoredEvent),
  Schema.declare((input: unknown): input is StoredEvent => typeof input === "object" && input !== null),
  {
    strict: true,
    decode: (input) => ParseResult.decodeUnknown(StoredEvent)(input),
    encode: (event) => ParseResult.succeed(encodeSharedStoredEvent(event))
  }
)

const events = SkeinRpcs.requests.get("thread.events")!

export const ServerRpcs = SkeinRpcs.add(
  events.setSuccess(RpcSchema.Stream({ success: SharedStoredEvent, failure: SkeinError }))
)
