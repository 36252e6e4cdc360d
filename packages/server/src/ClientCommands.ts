/**
 * What `call` and the human commands do (`thread new`, `send`, `show`, `follow`,
 * `fork`, `merge-back`, `rollback`, `tree`; declared in `Cli.ts`, which imports this
 * module when one of them runs), and how every command reports a failure. Only the
 * typed client: nothing here imports the runtime, the adapters or SQLite.
 *
 * Failures print the typed error as JSON on stderr (`{"_tag":…,"message":…,…}`)
 * and exit non-zero.
 */
import { RpcSchema } from "@effect/rpc"
import {
  AppThread,
  ContextTransfer,
  ForkThreadFields,
  InvalidInput,
  RunView,
  SkeinError,
  SkeinRpcs,
  StartRunFields,
  StoredEvent,
  ThreadId,
  ThreadView
} from "@skein/domain"
import { Cause, Console, Effect, Option, Schema, Stream } from "effect"
import type { Scope } from "effect"
import { CliExit } from "./CliExit.js"
import { HandshakeRefused, makeSkeinClient, type SkeinClientShape } from "./Client.js"
import { assistantReply, eventLine, showLines, treeLines } from "./Presentation.js"
import type { LineageNode } from "./Presentation.js"

const encodeSkeinError = Schema.encodeSync(SkeinError)

/** The JSON form of any failure: `_tag`, `message`, and the error's own fields. */
export const errorJson = (error: unknown, context: { readonly url?: string } = {}): Record<string, unknown> => {
  if (Schema.is(SkeinError)(error)) return { ...encodeSkeinError(error), message: error.message }
  if (typeof error === "object" && error !== null && "_tag" in error) {
    const tagged = error as { readonly _tag: string; readonly message?: unknown }
    if (tagged._tag === "RpcClientError") {
      const cause = (error as { readonly cause?: unknown }).cause
      if (cause instanceof HandshakeRefused) {
        return {
          _tag: cause.status === 401 ? "Unauthorized" : "ConnectionRefused",
          status: cause.status,
          message: cause.message
        }
      }
      return {
        _tag: "ConnectionFailed",
        message: `Could not reach Skein${context.url === undefined ? "" : ` at ${context.url}`}: ${String(tagged.message)}. Is the daemon running (skein daemon)?`
      }
    }
    return { _tag: tagged._tag, message: String(tagged.message ?? tagged._tag) }
  }
  return { _tag: "Defect", message: String(error) }
}

/** Prints the failure as JSON on stderr and turns it into a `CliExit`. */
export const reportFailures =
  (context: { readonly url?: string } = {}) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, CliExit, R> =>
    effect.pipe(
      Effect.catchAllCause((cause) => {
        if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
        const failure = Cause.failureOption(cause)
        const error = Option.isSome(failure) ? failure.value : Cause.squash(cause)
        if (error instanceof CliExit) return Effect.fail(error)
        return Console.error(JSON.stringify(errorJson(error, context))).pipe(
          Effect.zipRight(Effect.fail(new CliExit({ code: 1 })))
        )
      })
    )

// ---- the options the commands share (declared in Cli.ts) --------------------------

export interface Connection {
  readonly url: string
  readonly token: Option.Option<string>
}
interface Json {
  readonly json: boolean
}
interface OnThread extends Connection, Json {
  readonly thread: string
}

const withClient = <A, E>(options: Connection, use: (client: SkeinClientShape) => Effect.Effect<A, E, Scope.Scope>) =>
  Effect.scoped(
    Effect.flatMap(makeSkeinClient({ url: options.url, token: Option.getOrUndefined(options.token) }), use)
  ).pipe(reportFailures({ url: options.url }))

const printJson = (value: unknown) => Console.log(JSON.stringify(value))

// ---- call -------------------------------------------------------------------------

const parseJsonArg = (raw: Option.Option<string>): Effect.Effect<unknown, InvalidInput> =>
  Option.match(raw, {
    onNone: () => Effect.succeed({}),
    onSome: (text) =>
      Effect.try({
        try: () => JSON.parse(text) as unknown,
        catch: (e) => new InvalidInput({ detail: `the JSON argument does not parse (${(e as Error).message})` })
      })
  })

export const call = (
  o: Connection & {
    readonly limit: Option.Option<number>
    readonly method: string
    readonly payload: Option.Option<string>
  }
) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const rpc = SkeinRpcs.requests.get(o.method)
      if (rpc === undefined) {
        return yield* new InvalidInput({
          detail: `unknown method "${o.method}"; methods are ${Array.from(SkeinRpcs.requests.keys()).join(", ")}`
        })
      }
      const raw = yield* parseJsonArg(o.payload)
      const payload = yield* Schema.decodeUnknown(rpc.payloadSchema as Schema.Schema<unknown, unknown>)(raw).pipe(
        Effect.mapError((e) => new InvalidInput({ detail: `${o.method}: ${e.message}` }))
      )
      const [prefix, name] = o.method.split(".") as [string, string]
      // The typed client is indexed by method name; `call` takes the name at run time.
      const method = (client as unknown as Record<string, Record<string, (p: unknown) => unknown>>)[prefix]![name]!
      const stream = RpcSchema.getStreamSchemas(rpc.successSchema.ast)
      if (Option.isSome(stream)) {
        const encode = Schema.encode(stream.value.success as Schema.Schema<unknown, unknown>)
        const items = method(payload) as Stream.Stream<unknown, unknown>
        const bounded = Option.match(o.limit, { onNone: () => items, onSome: (n) => Stream.take(items, n) })
        return yield* Stream.runForEach(bounded, (item) => Effect.flatMap(encode(item), printJson))
      }
      const result = yield* method(payload) as Effect.Effect<unknown, unknown>
      const encoded = yield* Schema.encode(rpc.successSchema as Schema.Schema<unknown, unknown>)(result)
      yield* printJson(encoded)
    })
  )

// ---- human commands ---------------------------------------------------------------

export const threadNew = (o: Connection & Json & { readonly title: Option.Option<string> }) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const thread = yield* client.thread.create(Option.isSome(o.title) ? { title: o.title.value } : {})
      yield* o.json ? printJson(Schema.encodeSync(AppThread)(thread)) : Console.log(thread.id)
    })
  )

const StartRunPayload = Schema.Struct(StartRunFields)
const decodeThreadId = (raw: string) =>
  Schema.decodeUnknown(ThreadId)(raw).pipe(Effect.mapError((e) => new InvalidInput({ detail: `THREAD: ${e.message}` })))

export const send = (o: OnThread & { readonly provider: string; readonly message: string }) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const payload = yield* Schema.decodeUnknown(StartRunPayload)({
        threadId: o.thread,
        provider: o.provider,
        message: o.message,
        wait: true
      }).pipe(Effect.mapError((e) => new InvalidInput({ detail: e.message })))
      const run = yield* client.run.start(payload)
      if (o.json) return yield* printJson(Schema.encodeSync(RunView)(run))
      yield* Console.log(assistantReply(run))
      if (run.status !== "completed") {
        yield* Console.error(
          `run ${run.ordinal} ${run.status}${run.failure === null ? "" : `: ${run.failure.message}`}`
        )
        return yield* new CliExit({ code: 1 })
      }
    })
  )

export const show = (o: OnThread) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const view = yield* client.thread.get({ threadId: yield* decodeThreadId(o.thread) })
      yield* o.json ? printJson(Schema.encodeSync(ThreadView)(view)) : Console.log(showLines(view).join("\n"))
    })
  )

export const follow = (o: OnThread & { readonly limit: Option.Option<number>; readonly from: Option.Option<number> }) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const threadId = yield* decodeThreadId(o.thread)
      const events = client.thread.events(
        Option.isSome(o.from) ? { threadId, fromSequence: o.from.value } : { threadId }
      )
      const bounded = Option.match(o.limit, { onNone: () => events, onSome: (n) => Stream.take(events, n) })
      yield* Stream.runForEach(bounded, (e) =>
        o.json ? printJson(Schema.encodeSync(StoredEvent)(e)) : Console.log(eventLine(e))
      )
    })
  )

// ---- lineage ----------------------------------------------------------------------

export const fork = (
  o: OnThread & {
    readonly run: Option.Option<string>
    readonly checkpoint: Option.Option<string>
    readonly sideChat: boolean
    readonly title: Option.Option<string>
  }
) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const payload = yield* Schema.decodeUnknown(Schema.Struct(ForkThreadFields))({
        sourceThreadId: o.thread,
        sourcePoint: Option.isSome(o.run)
          ? { runId: o.run.value }
          : Option.isSome(o.checkpoint)
            ? { checkpointId: o.checkpoint.value }
            : "latest_stable",
        ...(o.sideChat ? { sideChat: true } : {}),
        ...(Option.isSome(o.title) ? { title: o.title.value } : {})
      }).pipe(Effect.mapError((e) => new InvalidInput({ detail: e.message })))
      const forked = yield* client.thread.fork(payload)
      yield* o.json ? printJson(Schema.encodeSync(AppThread)(forked.thread)) : Console.log(forked.thread.id)
    })
  )

export const mergeBack = (o: Connection & Json & { readonly fork: string }) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const transfer = yield* client.thread.mergeBack({ forkThreadId: yield* decodeThreadId(o.fork) })
      yield* o.json
        ? printJson(Schema.encodeSync(ContextTransfer)(transfer))
        : Console.log(`${transfer.id} merge_back ${transfer.status} into ${transfer.targetThreadId}`)
    })
  )

export const rollback = (o: OnThread & { readonly to: number; readonly restoreFiles: boolean }) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const view = yield* client.thread.rollback({
        threadId: yield* decodeThreadId(o.thread),
        toRunOrdinal: o.to,
        ...(o.restoreFiles ? { restoreFiles: true } : {})
      })
      yield* o.json ? printJson(Schema.encodeSync(ThreadView)(view)) : Console.log(showLines(view).join("\n"))
    })
  )

export const tree = (o: OnThread) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const load = (threadId: ThreadId, depth: number): Effect.Effect<LineageNode, unknown> =>
        Effect.gen(function* () {
          const view = yield* client.thread.get({ threadId })
          const children =
            depth >= 32 ? [] : yield* Effect.forEach(view.children, (c) => load(c.id, depth + 1), { concurrency: 4 })
          return { view, children }
        })
      const root = yield* load(yield* decodeThreadId(o.thread), 0)
      const encode = (node: LineageNode): unknown => ({
        thread: Schema.encodeSync(ThreadView)(node.view),
        children: node.children.map(encode)
      })
      yield* o.json ? printJson(encode(root)) : Console.log(treeLines(root).join("\n"))
    })
  )
