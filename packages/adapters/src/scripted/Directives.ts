/**
 * The scripted provider's directives: `[[name:args]]` markers in a user message
 * that tell it what to do. Pure: parsing and the recall rule, no I/O.
 */

export type Directive =
  | { readonly _tag: "Recall"; readonly word: string }
  | { readonly _tag: "Fail" }
  | { readonly _tag: "Crash" }
  | { readonly _tag: "Sleep"; readonly ms: number }
  | { readonly _tag: "Reason"; readonly text: string }
  | { readonly _tag: "Cmd"; readonly command: string; readonly exitCode: number }
  | { readonly _tag: "Write"; readonly path: string; readonly content: string }
  | { readonly _tag: "Plan"; readonly steps: ReadonlyArray<string> }
  | { readonly _tag: "Ask"; readonly question: string }
  | { readonly _tag: "Decide"; readonly text: string }
  | { readonly _tag: "Subagent"; readonly provider: string; readonly prompt: string }
  | { readonly _tag: "Child"; readonly description: string }
  | { readonly _tag: "Forget" }

const MARKER = /\[\[([a-z]+)(?::([\s\S]*?))?\]\]/g

/** Splits `a:b:c` at the first colon: ["a", "b:c"]; null when there is none. */
const splitFirst = (s: string): readonly [string, string] | null => {
  const i = s.indexOf(":")
  return i < 0 ? null : [s.slice(0, i), s.slice(i + 1)]
}

/** Splits `a:b:c` at the last colon: ["a:b", "c"]; null when there is none. */
const splitLast = (s: string): readonly [string, string] | null => {
  const i = s.lastIndexOf(":")
  return i < 0 ? null : [s.slice(0, i), s.slice(i + 1)]
}

const parseOne = (name: string, arg: string | undefined): Directive | null => {
  switch (name) {
    case "fail":
      return arg === undefined ? { _tag: "Fail" } : null
    case "crash":
      return arg === undefined ? { _tag: "Crash" } : null
    case "forget":
      return arg === undefined ? { _tag: "Forget" } : null
    case "recall":
      return arg !== undefined && arg.length > 0 ? { _tag: "Recall", word: arg } : null
    case "sleep":
      return arg !== undefined && /^\d+$/.test(arg) ? { _tag: "Sleep", ms: Number(arg) } : null
    case "reason":
      return arg !== undefined ? { _tag: "Reason", text: arg } : null
    case "decide":
      return arg !== undefined ? { _tag: "Decide", text: arg } : null
    case "ask":
      return arg !== undefined && arg.length > 0 ? { _tag: "Ask", question: arg } : null
    case "plan": {
      if (arg === undefined) return null
      const steps = arg
        .split(";")
        .map((s) => s.trim())
        .filter((s) => s.length > 0)
      return steps.length > 0 ? { _tag: "Plan", steps } : null
    }
    case "cmd": {
      const parts = arg === undefined ? null : splitLast(arg)
      if (parts === null || parts[0].length === 0 || !/^-?\d+$/.test(parts[1])) return null
      return { _tag: "Cmd", command: parts[0], exitCode: Number(parts[1]) }
    }
    case "write": {
      const parts = arg === undefined ? null : splitFirst(arg)
      if (parts === null || parts[0].trim().length === 0) return null
      // `\n` (backslash, n) in the content stands for a newline.
      return { _tag: "Write", path: parts[0].trim(), content: parts[1].replace(/\\n/g, "\n") }
    }
    case "child":
      return arg !== undefined && arg.trim().length > 0 ? { _tag: "Child", description: arg.trim() } : null
    case "subagent": {
      const parts = arg === undefined ? null : splitFirst(arg)
      if (parts === null || parts[0].length === 0) return null
      return { _tag: "Subagent", provider: parts[0], prompt: parts[1] }
    }
    default:
      return null
  }
}

/**
 * Every directive in the message, in order of appearance. Unknown or malformed
 * markers (`[[sleep:soon]]`, `[[nope]]`) are plain text, not directives.
 */
export const parseDirectives = (message: string): ReadonlyArray<Directive> => {
  const out: Array<Directive> = []
  for (const match of message.matchAll(MARKER)) {
    const directive = parseOne(match[1] ?? "", match[2])
    if (directive !== null) out.push(directive)
  }
  return out
}

/**
 * The hidden reasoning text `[[reason:TEXT]]` produces: `secret-` and TEXT reversed
 * (`abc` gives `secret-cba`). Derived, so the secret is never in the user's own
 * message: a test recalls the derived word, and the runtime needs to know nothing of
 * this syntax to keep reasoning out of handoffs.
 */
export const reasoningText = (text: string): string => `secret-${[...text].reverse().join("")}`

/**
 * Removes recall questions and answers (`[[recall:W]]`, `recall:W=yes|no`) from
 * context text: asking about a word, or having answered about it, is not knowing it.
 */
export const stripRecallNoise = (text: string): string =>
  text.replace(/\[\[recall:[\s\S]*?\]\]/g, " ").replace(/recall:\S*?=(?:yes|no)\b/g, " ")

/** Whether `word` occurs (case-sensitive substring) in any of the context texts. */
export const recalls = (word: string, context: ReadonlyArray<string>): boolean =>
  context.some((text) => stripRecallNoise(text).includes(word))
