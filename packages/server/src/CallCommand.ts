/**
 * `skein call METHOD JSON`: any RPC method by name, its payload checked against the
 * method's schema, its result (or each item of a stream) printed as JSON.
 */
import { RpcSchema } from "@effect/rpc"
import { InvalidInput, SkeinRpcs } from "@skein/domain"
import { Effect, Option, Schema, Stream } from "effect"
import { type Connection, printJson, withClient } from "./CliClient.js"

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
