/**
 * An Effect Schema as the MCP SDK takes a tool's input: Standard Schema (`validate`)
 * with its JSON Schema (`jsonSchema`), so `tools/list` shows the schema Skein decodes
 * with, and a call whose arguments do not decode is refused before any handler runs.
 */
import { JSONSchema, ParseResult, Schema } from "effect"

export interface ToolInput<A> {
  readonly "~standard": {
    readonly version: 1
    readonly vendor: string
    readonly validate: (value: unknown) => StandardResult<A>
    readonly jsonSchema: {
      readonly input: (options: { readonly target: string }) => Record<string, unknown>
      readonly output: (options: { readonly target: string }) => Record<string, unknown>
    }
    readonly types?: { readonly input: unknown; readonly output: A } | undefined
  }
}

type StandardResult<A> =
  | { readonly value: A; readonly issues?: undefined }
  | { readonly issues: ReadonlyArray<{ readonly message: string; readonly path?: ReadonlyArray<PropertyKey> }> }

/**
 * The schema's JSON Schema, without the `$schema` line (the SDK names its own dialect).
 * A struct without fields is plainly an empty object (Effect says "object or array").
 */
const jsonSchemaOf = (schema: Schema.Schema<any, any, never>): Record<string, unknown> => {
  const ast = schema.ast
  if (ast._tag === "TypeLiteral" && ast.propertySignatures.length === 0 && ast.indexSignatures.length === 0) {
    return { type: "object", properties: {}, additionalProperties: false }
  }
  const { $schema: _, ...rest } = JSONSchema.make(schema) as unknown as Record<string, unknown>
  return rest
}

/** `schema` (a struct of the tool's arguments) as a tool's input. */
export const toolInput = <A, I>(schema: Schema.Schema<A, I, never>): ToolInput<A> => {
  const decode = Schema.decodeUnknownEither(schema, { onExcessProperty: "error", errors: "all" })
  const json = jsonSchemaOf(schema)
  return {
    "~standard": {
      version: 1,
      vendor: "effect",
      validate: (value) => {
        const result = decode(value)
        if (result._tag === "Right") return { value: result.right }
        return {
          issues: ParseResult.ArrayFormatter.formatErrorSync(result.left).map((issue) => ({
            message: issue.message,
            path: issue.path
          }))
        }
      },
      jsonSchema: { input: () => json, output: () => json }
    }
  }
}
