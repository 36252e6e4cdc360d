/**
 * The help of every `skein` command: `skein --help`, `skein CMD --help` and
 * `skein help CMD` print it (`Cli.ts` answers them before @effect/cli parses anything,
 * so its generic texts, its `--wizard` and its colours never show). The texts are
 * `CommandDocs.ts`; this renders them. Pure data and pure rendering.
 */
import { paint, type Style } from "./CliStyle.js"
import { type CommandDoc, commandDocs, connectionOptions, jsonOption } from "./CommandDocs.js"

export { type CommandDoc, commandDocs } from "./CommandDocs.js"

const byPath = new Map(commandDocs.map((doc) => [doc.path, doc]))
export const commandDoc = (path: string): CommandDoc | undefined => byPath.get(path)

/** The option flags a command's help lists (`--url`, `--json` included when it takes them). */
export const documentedOptions = (doc: CommandDoc): ReadonlyArray<readonly [string, string]> => [
  ...(doc.options ?? []),
  ...(doc.json === true ? [jsonOption] : []),
  ...(doc.client === true ? connectionOptions : [])
]

const wrap = (text: string, width: number, indent: string): Array<string> => {
  const lines: Array<string> = []
  let line = ""
  for (const word of text.split(/\s+/)) {
    if (line.length > 0 && line.length + 1 + word.length > width) {
      lines.push(indent + line)
      line = word
    } else line = line.length === 0 ? word : `${line} ${word}`
  }
  if (line.length > 0) lines.push(indent + line)
  return lines
}

const WIDTH = 88

/** The help of one command. */
export const commandHelp = (doc: CommandDoc, style: Style): string => {
  const h = (s: string) => paint(style, "bold", s)
  const out: Array<string> = [...wrap(doc.summary, WIDTH, ""), "", `${h("Usage:")} ${doc.usage}`]
  for (const detail of doc.details ?? []) out.push("", ...wrap(detail, WIDTH, ""))
  const table = (title: string, rows: ReadonlyArray<readonly [string, string]>) => {
    if (rows.length === 0) return
    out.push("", h(title))
    for (const [name, text] of rows) {
      out.push(`  ${paint(style, "cyan", name)}`, ...wrap(text, WIDTH - 6, "      "))
    }
  }
  table("Arguments:", doc.args ?? [])
  table("Options:", documentedOptions(doc))
  out.push("", h(doc.examples.length > 1 ? "Examples:" : "Example:"), ...doc.examples.map((e) => `  ${e}`))
  return out.join("\n")
}

const groups: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
  ["Talk to agents", ["thread new", "threads", "send", "show", "follow", "interrupt", "approve", "subagent"]],
  ["Lineage", ["fork", "merge-back", "rollback", "tree", "handoff", "inspect"]],
  ["Run Skein", ["daemon", "stdio", "acp", "providers", "demo"]],
  ["For programs", ["call"]]
]

/** `skein --help`: what Skein is, each command in a line, and a first session. */
export const topHelp = (style: Style): string => {
  const h = (s: string) => paint(style, "bold", s)
  const width = Math.max(...groups.flatMap(([, paths]) => paths.map((p) => p.length)))
  const out: Array<string> = [
    "Skein: one conversation across coding-agent providers. A thread is the conversation;",
    "Codex, Claude Code or any other agent take turns on it, and Skein carries the context",
    "from one to the next.",
    "",
    `${h("Usage:")} skein COMMAND [ARGS] [OPTIONS]`
  ]
  for (const [title, paths] of groups) {
    out.push("", h(`${title}:`))
    for (const path of paths)
      out.push(`  ${paint(style, "cyan", path.padEnd(width))}  ${byPath.get(path)!.summary.split(/(?<=\.) /)[0]}`)
  }
  out.push(
    "",
    h("A first session:"),
    "  skein daemon &                              # listens on 127.0.0.1:7878",
    "  T=$(skein thread new --workspace . --title demo)",
    `  skein send $T alpha "hello"`,
    `  skein send $T beta "carry on"                # beta gets what alpha did`,
    "  skein show $T",
    "",
    "`skein COMMAND --help` (or `skein help COMMAND`) tells more; every command talking to a",
    "daemon takes --json for the machine form, --url and --token."
  )
  return out.join("\n")
}

const knownPaths = new Set(commandDocs.map((d) => d.path))

/** The command path at the start of `words` (`["thread", "new", "x"]` → `thread new`). */
export const commandPathOf = (words: ReadonlyArray<string>): string | undefined => {
  const positional = words.filter((w) => !w.startsWith("-"))
  const two = positional.slice(0, 2).join(" ")
  if (knownPaths.has(two)) return two
  return knownPaths.has(positional[0] ?? "") ? positional[0] : undefined
}

/** What `skein ARGS` asks of the help, if anything. */
export type HelpRequest =
  | { readonly _tag: "Help"; readonly text: (style: Style) => string }
  | { readonly _tag: "Refuse"; readonly message: string }

export const helpRequest = (args: ReadonlyArray<string>): HelpRequest | undefined => {
  const end = args.indexOf("--")
  const words = end === -1 ? args : args.slice(0, end)
  if (words.includes("--wizard")) {
    return {
      _tag: "Refuse",
      message: "there is no wizard mode: skein --help lists the commands, skein COMMAND --help explains one."
    }
  }
  if (words.length === 0) return { _tag: "Help", text: topHelp }
  // A group without its subcommand: its help.
  if (words.length === 1 && words[0] === "thread")
    return { _tag: "Help", text: (style) => commandHelp(byPath.get("thread")!, style) }
  const wantsHelp = words.includes("--help") || words.includes("-h")
  if (words[0] === "help" && words.length > 1 && words.slice(1).every((w) => w === "--help" || w === "-h")) {
    return { _tag: "Help", text: (style) => commandHelp(byPath.get("help")!, style) }
  }
  const asked = words[0] === "help" ? words.slice(1) : wantsHelp ? words : null
  if (asked === null) return undefined
  const path = commandPathOf(asked)
  const doc = path === undefined ? undefined : byPath.get(path)
  return { _tag: "Help", text: (style) => (doc === undefined ? topHelp(style) : commandHelp(doc, style)) }
}
