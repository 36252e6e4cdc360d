/**
 * Reading a Claude Code session's transcript, for the two questions the protocol does
 * not answer: which message a turn continued from (a rollback resumes there), and
 * which message ended a turn (a fork keeps history up to it). Claude Code keeps each
 * session as JSON lines under `<config dir>/projects/<working directory with every
 * character other than a letter or digit replaced by "-">/<session id>.jsonl`; every
 * entry has a `uuid` and the `parentUuid` it follows, and many entries are not
 * messages (attachments, queue operations, costs): only `user` and `assistant`
 * entries outside side chains (a subagent's own messages) are messages of the session.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"

interface Entry {
  readonly uuid: string
  readonly parentUuid: string | null
  readonly isMessage: boolean
  /** A user message that starts a turn (not a tool result, not meta). */
  readonly isPrompt: boolean
}

/** The transcript file of a session: where Claude Code puts it for `cwd`, else wherever it is under projects/. */
export const transcriptPath = (configDir: string, cwd: string, sessionId: string): string | null => {
  const projects = Path.join(configDir, "projects")
  const expected = Path.join(projects, cwd.replace(/[^a-zA-Z0-9]/g, "-"), `${sessionId}.jsonl`)
  if (Fs.existsSync(expected)) return expected
  try {
    for (const dir of Fs.readdirSync(projects)) {
      const candidate = Path.join(projects, dir, `${sessionId}.jsonl`)
      if (Fs.existsSync(candidate)) return candidate
    }
  } catch {
    // No projects directory yet.
  }
  return null
}

const isToolResultOnly = (content: unknown): boolean =>
  Array.isArray(content) &&
  content.length > 0 &&
  content.every((b) => (b as { type?: unknown })?.type === "tool_result")

const readEntries = (file: string): Array<Entry> => {
  const entries: Array<Entry> = []
  for (const line of Fs.readFileSync(file, "utf8").split("\n")) {
    if (line.trim().length === 0) continue
    let raw: Record<string, unknown>
    try {
      raw = JSON.parse(line) as Record<string, unknown>
    } catch {
      continue
    }
    if (typeof raw.uuid !== "string") continue
    const isMessage = (raw.type === "user" || raw.type === "assistant") && raw.isSidechain !== true
    const content = (raw.message as { content?: unknown } | undefined)?.content
    entries.push({
      uuid: raw.uuid,
      parentUuid: typeof raw.parentUuid === "string" ? raw.parentUuid : null,
      isMessage,
      isPrompt: isMessage && raw.type === "user" && raw.isMeta !== true && !isToolResultOnly(content)
    })
  }
  return entries
}

/**
 * The message a turn followed: from the turn's first message, up its parents to the
 * nearest message. `undefined`: that message is not in the transcript; `null`: the turn
 * was the first of the session.
 */
export const messageBefore = (file: string, turnUuid: string): string | null | undefined => {
  const entries = readEntries(file)
  const byUuid = new Map(entries.map((e) => [e.uuid, e]))
  const start = byUuid.get(turnUuid)
  if (start === undefined) return undefined
  let parent = start.parentUuid
  for (let hops = 0; parent !== null && hops < 100_000; hops++) {
    const entry = byUuid.get(parent)
    if (entry === undefined) return null
    if (entry.isMessage) return entry.uuid
    parent = entry.parentUuid
  }
  return null
}

/**
 * The last message of the turn that `turnUuid` started: following the entries that
 * descend from it, in file order, until the next prompt. `undefined` when the turn's
 * first message is not in the transcript.
 */
export const lastMessageOf = (file: string, turnUuid: string): string | undefined => {
  const entries = readEntries(file)
  const at = entries.findIndex((e) => e.uuid === turnUuid)
  if (at < 0) return undefined
  const chain = new Set([turnUuid])
  let last = turnUuid
  for (const entry of entries.slice(at + 1)) {
    if (entry.parentUuid === null || !chain.has(entry.parentUuid)) continue
    if (entry.isPrompt) break
    chain.add(entry.uuid)
    if (entry.isMessage) last = entry.uuid
  }
  return last
}
