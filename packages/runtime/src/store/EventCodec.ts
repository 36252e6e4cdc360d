/**
 * Thread events to and from their stored JSON. Encoding goes through the event's own
 * class Schema (chosen by `_tag`, about twice as fast as the union) and serialises the
 * entity once: the projection row's `data` is the entity JSON, and the log's `payload`
 * is the same text wrapped as `{"_tag": …, "<field>": <data>}`: the same JSON value as
 * `Schema.encodeSync(ThreadEvent)(event)`, with `_tag` first. Both are stored with
 * their long strings taken out (Blobs.ts); a transport gets the whole payload.
 */
import {
  CheckpointRecorded,
  HandoffRecorded,
  ProviderThreadRecorded,
  ProviderThreadServed,
  RunEnded,
  RunStarted,
  RunUpdated,
  StorageError,
  ThreadCreated,
  ThreadEvent,
  ThreadUpdated,
  TransferRecorded,
  TurnItemRecorded
} from "@skein/domain"
import type { StoredEvent } from "@skein/domain"
import { Either, ParseResult, Schema } from "effect"
import * as Blobs from "./Blobs.js"
import { describeError } from "./Codec.js"

export type EncodedThreadEvent = typeof ThreadEvent.Encoded
export type ThreadEventTag = ThreadEvent["_tag"]

const members = {
  ThreadCreated: { schema: ThreadCreated, field: "thread" },
  ThreadUpdated: { schema: ThreadUpdated, field: "thread" },
  RunStarted: { schema: RunStarted, field: "run" },
  RunUpdated: { schema: RunUpdated, field: "run" },
  RunEnded: { schema: RunEnded, field: "run" },
  TurnItemRecorded: { schema: TurnItemRecorded, field: "item" },
  ProviderThreadRecorded: { schema: ProviderThreadRecorded, field: "providerThread" },
  // Not one entity: its fields are the data, after the tag.
  ProviderThreadServed: { schema: ProviderThreadServed, field: null },
  TransferRecorded: { schema: TransferRecorded, field: "transfer" },
  HandoffRecorded: { schema: HandoffRecorded, field: "handoff" },
  CheckpointRecorded: { schema: CheckpointRecorded, field: "checkpoint" }
} as const satisfies Record<ThreadEventTag, { readonly schema: unknown; readonly field: string | null }>

type Encode = (event: ThreadEvent) => Either.Either<EncodedThreadEvent, ParseResult.ParseError>
type Decode = (input: unknown) => Either.Either<ThreadEvent, ParseResult.ParseError>

const codecs = new Map<
  string,
  {
    readonly schema: new (...args: never) => unknown
    readonly encode: Encode
    readonly decode: Decode
    readonly prefix: string
    readonly field: string | null
  }
>(
  Object.entries(members).map(([tag, { schema, field }]) => [
    tag,
    {
      schema: schema as unknown as new (...args: never) => unknown,
      encode: Schema.encodeEither(schema as unknown as Schema.Schema<ThreadEvent, EncodedThreadEvent>),
      decode: Schema.decodeUnknownEither(schema as unknown as Schema.Schema<ThreadEvent, EncodedThreadEvent>),
      prefix:
        field === null ? `{"_tag":${JSON.stringify(tag)},` : `{"_tag":${JSON.stringify(tag)},${JSON.stringify(field)}:`,
      field
    }
  ])
)
const decodeUnion = Schema.decodeUnknownEither(ThreadEvent)

/** An event in its stored forms. */
export interface StoredForm {
  readonly encoded: EncodedThreadEvent
  /** JSON of the encoded entity as stored (projection `data`). */
  readonly data: string
  /** JSON of the encoded event as stored (log `payload`). */
  readonly payload: string
  /** The long strings `data` and `payload` refer to, stored beside them. */
  readonly blobs: ReadonlyArray<Blobs.Blob>
  /** JSON of the encoded event, whole: what a transport sends. */
  readonly whole: string
}

const formatError = (error: ParseResult.ParseError) => ParseResult.TreeFormatter.formatErrorSync(error)

/**
 * The log payload of each event the store has written or read back, by event: a
 * transport sends that text instead of encoding the event again (`storedEventJson`).
 * Events are immutable, so the text stays true for as long as the event lives.
 */
const payloads = new WeakMap<ThreadEvent, string>()

export const encodeEvent = (event: ThreadEvent): Either.Either<StoredForm, StorageError> => {
  const form = encodeForm(event)
  if (Either.isRight(form)) payloads.set(event, form.right.whole)
  return form
}

const encodeForm = (event: ThreadEvent): Either.Either<StoredForm, StorageError> => {
  const codec = codecs.get(event._tag)
  if (codec === undefined) {
    return Either.left(new StorageError({ detail: `cannot store an event of unknown type ${String(event._tag)}` }))
  }
  if (event instanceof codec.schema) {
    // A class instance was validated by its constructor, and every domain schema encodes
    // to itself (Schema.test.ts checks that this JSON equals the Schema encoding), so
    // validating again on the hot path would only cost time.
    return Either.right(formOf(codec, event as unknown as EncodedThreadEvent))
  }
  const encoded = codec.encode(event)
  if (Either.isLeft(encoded)) {
    return Either.left(
      new StorageError({ detail: `cannot store an invalid ${event._tag} event: ${formatError(encoded.left)}` })
    )
  }
  return Either.right(formOf(codec, encoded.right))
}

/** The stored forms of an encoded event: its entity's JSON (or its fields'), wrapped with its tag. */
const formOf = (
  codec: { readonly prefix: string; readonly field: string | null },
  encoded: EncodedThreadEvent
): StoredForm => {
  const value =
    codec.field !== null ? (encoded as unknown as Record<string, unknown>)[codec.field] : withoutTag(encoded)
  const whole = JSON.stringify(value)
  const stored = Blobs.externalize(value, whole)
  if (stored.blobs.length === 0) {
    const payload = wrapData(codec, whole)
    return { encoded, data: whole, payload, blobs: stored.blobs, whole: payload }
  }
  return {
    encoded,
    data: Blobs.mark(stored.json, stored.blobs),
    payload: Blobs.mark(wrapData(codec, stored.json), stored.blobs),
    blobs: stored.blobs,
    whole: wrapData(codec, whole)
  }
}

const withoutTag = (encoded: EncodedThreadEvent): Record<string, unknown> => {
  const { _tag: _, ...fields } = encoded as unknown as Record<string, unknown>
  return fields
}

/** The event's payload around its data: the tag, then the entity (or the fields). */
const wrapData = (codec: { readonly prefix: string; readonly field: string | null }, data: string): string =>
  codec.field !== null ? `${codec.prefix}${data}}` : `${codec.prefix}${data.slice(1)}`

/** Decodes a stored payload; `what` names the event in the error (e.g. `event 3 of thread thr_1`). */
export const decodeEvent = (payload: string, what: string): Either.Either<ThreadEvent, StorageError> => {
  let value: unknown
  try {
    value = JSON.parse(payload)
  } catch (error) {
    return Either.left(new StorageError({ detail: `${what} holds invalid JSON (${describeError(error)})` }))
  }
  const tag = typeof value === "object" && value !== null ? (value as { _tag?: unknown })._tag : undefined
  const codec = typeof tag === "string" ? codecs.get(tag) : undefined
  const decoded = codec !== undefined ? codec.decode(value) : decodeUnion(value)
  if (Either.isRight(decoded)) payloads.set(decoded.right, payload)
  return Either.mapLeft(
    decoded,
    (error) => new StorageError({ detail: `${what} is not a valid thread event: ${formatError(error)}` })
  )
}

/**
 * The JSON of a stored event, the same JSON value as `Schema.encodeSync(StoredEvent)`
 * gives: for an event the store wrote or read, its payload as stored, with no encoding
 * (fan-out sends every commit to many followers, and encoding was a visible share of
 * each run's time). Throws on an event the schema refuses, as `encodeSync` would.
 */
export const storedEventJson = (stored: StoredEvent): string => {
  let payload = payloads.get(stored.event)
  if (payload === undefined) payload = Either.getOrThrowWith(encodeEvent(stored.event), (error) => error).payload
  return `{"sequence":${stored.sequence},"threadId":${JSON.stringify(stored.threadId)},"threadSequence":${stored.threadSequence},"commandId":${JSON.stringify(stored.commandId)},"createdAt":${JSON.stringify(stored.createdAt)},"event":${payload}}`
}
