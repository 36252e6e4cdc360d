/**
 * Tagged Schema classes whose constructor validates with a validator compiled once per
 * class. `new C(props)` on a plain `Schema.TaggedClass` derives the type side of its
 * schema again on every call, a walk over every nested field, before it validates,
 * about twice the cost of the validation alone; the runtime builds a dozen events and
 * messages per run, so that walk would be a visible share of each run. Same checks,
 * same `ParseError` on bad props, same `new C(props, true)` to skip validation.
 */
import { ParseResult, Schema } from "effect"

export const ValidatedTaggedClass =
  <Self = never>() =>
  <Tag extends string, Fields extends Schema.Struct.Fields>(tag: Tag, fields: Fields) => {
    const Base = Schema.TaggedClass<Self>()(tag, fields)
    let validate: ((props: unknown) => unknown) | undefined
    const Validated = class extends (Base as unknown as new (props: unknown, options?: Schema.MakeOptions) => object) {
      constructor(props: object = {}, options?: Schema.MakeOptions) {
        const skip = options === true || (typeof options === "object" && options.disableValidation === true)
        if (!skip) {
          validate ??= ParseResult.validateSync(
            Schema.typeSchema(
              Schema.Struct({ ...fields, _tag: Schema.Literal(tag) }).annotations({
                identifier: `${tag} (Constructor)`
              })
            )
          )
          props = validate({ ...props, _tag: tag }) as object
        }
        super(props, true)
      }
    }
    return Validated as unknown as typeof Base
  }
