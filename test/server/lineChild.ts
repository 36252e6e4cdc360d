/**
 * A child process spoken to in lines of JSON (`skein stdio`): write lines, collect
 * the JSON lines it answers, wait (bounded) for a condition, end it by PID.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"

export interface LineChild {
  readonly child: ChildProcessWithoutNullStreams
  readonly replies: Array<any>
  readonly stderr: () => string
  readonly write: (line: string) => void
  /** Resolves once `condition()` holds, polling every 10 ms; rejects after `timeoutMs`. */
  readonly until: (condition: () => boolean, timeoutMs: number, what: string) => Promise<void>
  readonly alive: () => boolean
  /** SIGKILL by PID if still running; resolves once it has exited. */
  readonly kill: () => Promise<void>
}

export const spawnLineChild = (
  command: string,
  args: ReadonlyArray<string>,
  env: Record<string, string>
): LineChild => {
  const child = spawn(command, [...args], { env, stdio: ["pipe", "pipe", "pipe"] })
  const replies: Array<any> = []
  let buffer = ""
  let stderr = ""
  child.stdout.setEncoding("utf8")
  child.stdout.on("data", (text: string) => {
    buffer += text
    let newline = buffer.indexOf("\n")
    while (newline !== -1) {
      const line = buffer.slice(0, newline)
      buffer = buffer.slice(newline + 1)
      if (line.trim() !== "") replies.push(JSON.parse(line))
      newline = buffer.indexOf("\n")
    }
  })
  child.stderr.setEncoding("utf8")
  child.stderr.on("data", (text: string) => (stderr = (stderr + text).slice(-20_000)))
  child.stdin.on("error", () => {})
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const alive = () => child.exitCode === null && child.signalCode === null
  return {
    child,
    replies,
    stderr: () => stderr,
    write: (line) => void child.stdin.write(`${line}\n`),
    until: async (condition, timeoutMs, what) => {
      const deadline = Date.now() + timeoutMs
      while (!condition()) {
        if (!alive())
          throw new Error(
            `the child exited (${child.exitCode ?? child.signalCode}) waiting for ${what}; stderr: ${stderr}`
          )
        if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
        await new Promise((r) => setTimeout(r, 10))
      }
    },
    alive,
    kill: async () => {
      if (alive() && child.pid !== undefined) process.kill(child.pid, "SIGKILL")
      await exited
    }
  }
}
