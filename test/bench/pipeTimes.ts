/**
 * When an agent binary's turn began and ended as this process saw it at the pipes: the
 * write of the line that starts a turn to the child's stdin, and the arrival on its
 * stdout of the end of the line that ends it. Whoever drives the binary (the baseline's
 * runtime, this checkout's, or the bench's own client) writes and reads through the same
 * pipes, so the time between the two is the binary's turn, the same yardstick for all
 * three, and a run's wall time less it is its driver's time outside the turn.
 *
 * It works by wrapping `child_process.spawn` while it observes: every child spawned then
 * gets its stdin's `write` wrapped and a first listener on its stdout. Both only search
 * and stamp.
 */
import * as ChildProcess from "node:child_process"
import { createRequire, syncBuiltinESMExports } from "node:module"

/** How a binary's turn shows on its pipes. */
export interface TurnLines {
  /** Whether a line written to stdin starts a turn. */
  readonly starts: (line: string) => boolean
  /** What the stdout line that ends a turn holds, and no other line does. */
  readonly endMark: string
}

/** One turn as the pipes showed it (`performance.now()` ms). */
export interface PipeTurn {
  readonly pid: number
  readonly written: number
  readonly ended: number
}

/** Characters `from` to `to` of a chunk (byte offsets for a Buffer: the marks are ASCII). */
const part = (chunk: Buffer | string, from: number, to?: number): string =>
  typeof chunk === "string" ? chunk.slice(from, to) : chunk.toString("latin1", from, to)

/** Watches one child's stdout for the end of a turn's last line (chunks as Buffers, or strings once decoded). */
const endWatch = (mark: string, onEnd: (at: number) => void) => {
  /** The previous chunk's last characters, for a mark split between two chunks. */
  let tail = ""
  /** A turn's last line began and its newline has not come yet. */
  let open = false
  return (chunk: Buffer | string) => {
    const at = performance.now()
    let from = 0
    if (!open) {
      const found = chunk.indexOf(mark)
      const head = tail === "" ? -1 : (tail + part(chunk, 0, mark.length)).indexOf(mark)
      if (found < 0 && head < 0) {
        tail = part(chunk, Math.max(0, chunk.length - mark.length + 1))
        return
      }
      open = true
      from = head >= 0 ? 0 : found
    }
    tail = ""
    if (chunk.indexOf("\n", from) < 0) return
    open = false
    onEnd(at)
  }
}

/**
 * Observes the turns of the children spawned until `stop`: `take()` gives the last turn
 * written and ended since the previous `take()`, or undefined when there was none whole.
 */
export const observePipes = (lines: TurnLines) => {
  const require = createRequire(import.meta.url)
  const cp = require("node:child_process") as typeof ChildProcess
  const original = cp.spawn
  let written: { pid: number; at: number } | undefined
  let ended: { pid: number; at: number } | undefined
  const watched = ((...args: Parameters<typeof ChildProcess.spawn>) => {
    const child = (original as (...a: typeof args) => ChildProcess.ChildProcess)(...args)
    const pid = child.pid ?? -1
    const stdin = child.stdin
    if (stdin !== null) {
      const write = stdin.write.bind(stdin) as (chunk: unknown, ...rest: Array<unknown>) => boolean
      stdin.write = ((chunk: unknown, ...rest: Array<unknown>) => {
        if (typeof chunk === "string" && lines.starts(chunk)) written = { pid, at: performance.now() }
        return write(chunk, ...rest)
      }) as typeof stdin.write
    }
    child.stdout?.prependListener(
      "data",
      endWatch(lines.endMark, (at) => {
        ended = { pid, at }
      })
    )
    return child
  }) as typeof ChildProcess.spawn
  cp.spawn = watched
  syncBuiltinESMExports()
  return {
    take: (): PipeTurn | undefined => {
      const turn =
        written !== undefined && ended !== undefined && written.pid === ended.pid && ended.at > written.at
          ? { pid: written.pid, written: written.at, ended: ended.at }
          : undefined
      written = undefined
      ended = undefined
      return turn
    },
    stop: () => {
      cp.spawn = original
      syncBuiltinESMExports()
    }
  }
}

/** Codex's and Claude Code's turns on their pipes. */
export const turnLines = {
  codex: { starts: (line) => line.includes('"method":"turn/start"'), endMark: '"method":"turn/completed"' },
  claude: { starts: (line) => line.startsWith('{"type":"user"'), endMark: '"type":"result"' }
} as const satisfies Record<string, TurnLines>
