/**
 * How each Skein method's values cross the wire, for the server (`RpcDispatch`) and
 * the typed client (`Client`): the frames are `@effect/rpc`'s, the codecs compiled
 * once per method and synchronous.
 *
 * `@effect/rpc` encodes and decodes every answer through the method's `Schema.Exit`,
 * whose declaration walks the value once to check it and whose transformation walks
 * it again to encode or decode it: two walks of a large value (a thread view) per
 * call. Here a success goes through its own schema alone, once,
 * and the server does not encode at all a success whose schema transforms nothing
 * (its encoded form is the value itself: see `encodesAsItself`); the client still
 * decodes it, so what a caller gets has passed the schema. Failures and defects,
 * rare and small, go through the whole exit schema.
 */
import { Rpc, RpcSchema } from "@effect/rpc"
import { SkeinRpcs } from "@skein/domain"
import { Either, Exit, Option, ParseResult, Schema } from "effect"
import type { SchemaAST } from "effect"

/**
 * Whether a schema's encoded form is its value unchanged: no transformation and no
 * declaration (classes, `Option`, dates) anywhere in it. Refinements and brands only
 * check, so they do not count.
 */
export const encodesAsItself = (ast: SchemaAST.AST, seen: Set<SchemaAST.AST> = new Set()): boolean => {
  if (seen.has(ast)) return true
  seen.add(ast)
  switch (ast._tag) {
    case "Transformation":
    case "Declaration":
      return false
    case "Refinement":
      return encodesAsItself(ast.from, seen)
    case "Suspend":
      return encodesAsItself(ast.f(), seen)
    case "TypeLiteral":
      return (
        ast.propertySignatures.every((p) => encodesAsItself(p.type, seen)) &&
        ast.indexSignatures.every((i) => encodesAsItself(i.type, seen))
      )
    case "Union":
      return ast.types.every((t) => encodesAsItself(t, seen))
    case "TupleType":
      return (
        ast.elements.every((e) => encodesAsItself(e.type, seen)) && ast.rest.every((r) => encodesAsItself(r.type, seen))
      )
    default:
      return true
  }
}

type AnySchema = Schema.Schema<unknown, unknown, never>

/** One method's codecs. Each throws a `ParseError` on a value its schema refuses. */
export interface MethodCodec {
  readonly tag: string
  readonly stream: boolean
  /** Client: the payload as the wire carries it. */
  readonly encodePayload: (payload: unknown) => unknown
  /** Server: a success as the wire carries it. */
  readonly encodeSuccess: (value: unknown) => unknown
  /** Server: any exit (failures and defects) as the wire carries it. */
  readonly encodeExit: (exit: Exit.Exit<unknown, unknown>) => unknown
  /** Client: an exit from the wire. */
  readonly decodeExit: (exit: unknown) => Exit.Exit<unknown, unknown>
  /** Client: the values of a stream's chunk from the wire (streams only). */
  readonly decodeChunk: (values: unknown) => ReadonlyArray<unknown>
}

const identity = (value: unknown) => value

/**
 * `f`, compiled on first use: compiling a schema's parser walks all of it, and a
 * command-line call, which uses one method, should not pay for every method's.
 */
const lazily = <A, B>(compile: () => (a: A) => B): ((a: A) => B) => {
  let compiled: ((a: A) => B) | undefined
  return (a) => (compiled ??= compile())(a)
}

const makeCodec = (rpc: Rpc.AnyWithProps): MethodCodec => {
  const payload = rpc.payloadSchema as AnySchema
  const success = rpc.successSchema as AnySchema
  const exitSchema = () =>
    Rpc.exitSchema(rpc as unknown as Rpc.Any) as unknown as Schema.Schema<Exit.Exit<unknown, unknown>, unknown, never>
  const streamSchemas = RpcSchema.getStreamSchemas(rpc.successSchema.ast)
  const stream = Option.isSome(streamSchemas)
  const decodeSuccess = lazily(() => ParseResult.decodeUnknownEither(success))
  const decodeWholeExit = lazily(() => Schema.decodeUnknownSync(exitSchema()))
  return {
    tag: rpc._tag,
    stream,
    encodePayload: lazily(() => (encodesAsItself(payload.ast) ? identity : Schema.encodeSync(payload))),
    encodeSuccess: lazily(() => (encodesAsItself(success.ast) ? identity : Schema.encodeSync(success))),
    encodeExit: lazily(() => Schema.encodeSync(exitSchema())),
    decodeExit: (exit) => {
      // A stream's exit carries no value (its values came in chunks): the exit schema reads it.
      if (
        !stream &&
        typeof exit === "object" &&
        exit !== null &&
        (exit as { readonly _tag?: unknown })._tag === "Success"
      ) {
        const decoded = decodeSuccess((exit as { readonly value?: unknown }).value)
        if (Either.isRight(decoded)) return Exit.succeed(decoded.right)
        throw new ParseResult.ParseError({ issue: decoded.left })
      }
      return decodeWholeExit(exit)
    },
    decodeChunk: lazily(() =>
      Schema.decodeUnknownSync(
        Schema.NonEmptyArray(
          Option.isSome(streamSchemas)
            ? (streamSchemas.value.success as AnySchema)
            : (Schema.Never as unknown as AnySchema)
        )
      )
    )
  }
}

/** Every method's codecs, by method name. */
export const wireCodecs: ReadonlyMap<string, MethodCodec> = new Map(
  Array.from(SkeinRpcs.requests.values(), (rpc) => [rpc._tag, makeCodec(rpc as unknown as Rpc.AnyWithProps)])
)

/**
 * An `Exit` frame for a request, its exit already encoded (a success as
 * `{ _tag: "Success", value }`; a void one has no value, as `JSON.stringify` writes it).
 */
export const exitFrame = (requestId: string, exit: unknown): string =>
  `{"_tag":"Exit","requestId":${JSON.stringify(requestId)},"exit":${JSON.stringify(exit)}}`
