/**
 * `skein` under a pseudo-terminal, as a person at a terminal runs it: `script` from
 * util-linux (package bsdutils, Essential on Debian, so on every stock machine) gives
 * the command a terminal for stdout and stderr and copies what it wrote.
 */
import { spawn } from "node:child_process"
import { binPath, type RunResult } from "./support.js"

const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`

/** Runs `skein ARGS` on a pseudo-terminal to completion (killed by PID after `timeoutMs`); stdout holds both streams. */
export const runSkeinOnTerminal = (
  args: ReadonlyArray<string>,
  env: Record<string, string>,
  timeoutMs = 20_000
): Promise<RunResult> =>
  new Promise((resolve, reject) => {
    const command = [process.execPath, binPath, ...args].map(quote).join(" ")
    const child = spawn("script", ["--quiet", "--flush", "--return", "--command", command, "/dev/null"], {
      env: { ...env, TERM: "xterm-256color" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()))
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs)
    child.on("error", reject)
    child.on("close", (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout: stdout.replace(/\r\n/g, "\n"), stderr })
    })
  })
