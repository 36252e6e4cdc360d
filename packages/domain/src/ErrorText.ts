/**
 * Error texts about values a caller sent: bounded, and safe to build from any value.
 * Both doors into Skein use them, the RPC server's screening and the Orchestrator an
 * embedding host calls, so that a bad payload reads the same through either, and a
 * huge or hostile one cannot make its own error message huge.
 */
import { ParseResult } from "effect"

/** Longest error detail sent back; longer ones are cut. */
export const MAX_DETAIL_CHARS = 1_000
/** `text`, cut to `max` characters with a note of how much was cut. */
export const boundedText = (text: string, max = MAX_DETAIL_CHARS): string =>
  text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`

/** A short, safe description of any value for an error message: never recursive, never long. */
export const describeValue = (value: unknown): string => {
  if (value === null) return "null"
  if (Array.isArray(value)) return `an array of ${value.length}`
  switch (typeof value) {
    case "string":
      return JSON.stringify(boundedText(value, 64))
    case "number":
    case "boolean":
    case "bigint":
      return String(value)
    case "undefined":
      return "nothing"
    case "object":
      return "an object"
    default:
      return `a ${typeof value}`
  }
}

/** A stand-in for part of a value in an error message (the formatter prints its text as is). */
class Preview {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text
  }
}
const PREVIEW_ITEMS = 8
const PREVIEW_DEPTH = 3
const PREVIEW_CHARS = 100

/**
 * A small copy of `value` for an error message: at most 8 items or keys per level, 3
 * levels, 100 characters per string. The schema formatter prints the whole value it
 * was given, which for a 4 MiB payload costs far more than parsing it.
 */
export const previewValue = (value: unknown, level = 0): unknown => {
  if (typeof value === "string") {
    return value.length <= PREVIEW_CHARS
      ? value
      : new Preview(`${JSON.stringify(value.slice(0, PREVIEW_CHARS))}… (${value.length} characters)`)
  }
  if (typeof value !== "object" || value === null) return value
  if (level >= PREVIEW_DEPTH) return new Preview(Array.isArray(value) ? `[… ${value.length} items]` : "{…}")
  if (Array.isArray(value)) {
    const head: Array<unknown> = value.slice(0, PREVIEW_ITEMS).map((item) => previewValue(item, level + 1))
    if (value.length > PREVIEW_ITEMS) head.push(new Preview(`… ${value.length - PREVIEW_ITEMS} more`))
    return head
  }
  const copy: Record<string, unknown> = {}
  let count = 0
  for (const key in value) {
    if (!Object.prototype.hasOwnProperty.call(value, key)) continue
    if (count++ === PREVIEW_ITEMS) {
      copy["…"] = new Preview("more keys")
      break
    }
    copy[key] = previewValue((value as Record<string, unknown>)[key], level + 1)
  }
  return copy
}

/** The same issue with every value it carries replaced by its preview. */
const previewIssue = (issue: ParseResult.ParseIssue): ParseResult.ParseIssue => {
  const actual = previewValue(issue.actual)
  switch (issue._tag) {
    case "Type":
      return new ParseResult.Type(issue.ast, actual, issue.message)
    case "Forbidden":
      return new ParseResult.Forbidden(issue.ast, actual, issue.message)
    case "Unexpected":
      return new ParseResult.Unexpected(actual, issue.message)
    case "Missing":
      return issue
    case "Pointer":
      return new ParseResult.Pointer(issue.path, actual, previewIssue(issue.issue))
    case "Refinement":
      return new ParseResult.Refinement(issue.ast, actual, issue.kind, previewIssue(issue.issue))
    case "Transformation":
      return new ParseResult.Transformation(issue.ast, actual, issue.kind, previewIssue(issue.issue))
    case "Composite": {
      const issues = Array.isArray(issue.issues)
        ? (issue.issues.map(previewIssue) as unknown as readonly [
            ParseResult.ParseIssue,
            ...Array<ParseResult.ParseIssue>
          ])
        : previewIssue(issue.issues as ParseResult.ParseIssue)
      return new ParseResult.Composite(issue.ast, actual, issues)
    }
  }
}

/**
 * A parse error as text: values shown as previews, the text cut to 1,000 characters,
 * and a fixed text should formatting throw (it cannot overflow once depth is capped).
 */
export const formatParseError = (error: ParseResult.ParseError): string => {
  try {
    return boundedText(ParseResult.TreeFormatter.formatIssueSync(previewIssue(error.issue)))
  } catch {
    return "the payload does not match the method's schema"
  }
}
