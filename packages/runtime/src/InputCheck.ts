/**
 * What a caller hands the Orchestrator, checked against the payload schema of the RPC
 * method it stands for. The RPC server decodes every payload by that schema before it
 * calls the Orchestrator; an embedding host calls it directly, with values only the
 * compiler has seen (an empty message, a budget out of range, a number where a string
 * goes). Either way a bad input is refused with `InvalidInput` (the method, the field,
 * what was wrong, in bounded text) before anything runs, so it leaves no trace.
 */
import { formatParseError, InvalidInput, SkeinRpcs } from "@skein/domain"
import { Effect, Either, Schema } from "effect"
import type { ParseResult } from "effect"

type Validator = (input: unknown) => Either.Either<unknown, ParseResult.ParseError>

/** One validator per method, compiled when the method is first used. */
const validators = new Map<string, Validator>()

const validatorOf = (method: string): Validator => {
  let validate = validators.get(method)
  if (validate === undefined) {
    const rpc = SkeinRpcs.requests.get(method)
    if (rpc === undefined) throw new Error(`InputCheck: no RPC method called ${method}`)
    validate = Schema.validateEither(rpc.payloadSchema as Schema.Schema<unknown, unknown, never>)
    validators.set(method, validate)
  }
  return validate
}

/** `input` if it is a valid payload of `method`, else `InvalidInput`. */
export const checked = <A>(method: string, input: A): Effect.Effect<A, InvalidInput> => {
  const result = validatorOf(method)(input)
  return Either.isRight(result)
    ? Effect.succeed(result.right as A)
    : Effect.fail(new InvalidInput({ detail: `${method}: ${formatParseError(result.left)}` }))
}
