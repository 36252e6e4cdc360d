/**
 * `skein` under a pseudo-terminal, as a person at a terminal runs it: `script` from
 * util-linux (package bsdutils, Essential on Debian, so on every stock machine) gives
 * the command a terminal for stdout and stderr and copies what it wrote.
 */
import { binPath, type RunResult, runProcess } from "./support.js"

const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`

/** Runs `skein ARGS` on a pseudo-terminal to completion (killed by PID after `timeoutMs`); stdout holds both streams. */
export const runSkeinOnTerminal = (
  args: ReadonlyArray<string>,
  env: Record<string, string>,
  timeoutMs = 20_000
): Promise<RunResult> =>
  runProcess(
    "script",
    [
      "--quiet",
      "--flush",
      "--return",
      "--command",
      [process.execPath, binPath, ...args].map(quote).join(" "),
      "/dev/null"
    ],
    { ...env, TERM: "xterm-256color" },
    { timeoutMs }
  ).then((result) => ({ ...result, stdout: result.stdout.replace(/\r\n/g, "\n") }))
