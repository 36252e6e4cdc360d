/**
 * The runtime host (host.ts) in a process of its own, for the crash tests: started with
 * its arguments, it prints one JSON line once it is where the test wants it, then waits
 * to be killed. Imported by tests from their sources; the host itself runs compiled
 * (npm test runs tsc -b first).
 */
import { spawn, type ChildProcess } from "node:child_process"
import { createInterface } from "node:readline"
import { fileURLToPath } from "node:url"

const hostScript = fileURLToPath(new URL("../../test/dist/support/host.js", import.meta.url))

/**
 * Starts the host with `args` and resolves with it and the line it printed, parsed. A
 * host that prints nothing within `timeoutMs` is killed, and the error holds its stderr.
 */
export const startHost = async <A>(
  args: ReadonlyArray<string>,
  timeoutMs: number
): Promise<{ readonly host: ChildProcess; readonly info: A }> => {
  const host = spawn(process.execPath, [hostScript, ...args], { stdio: ["ignore", "pipe", "pipe"] })
  let stderr = ""
  host.stderr.on("data", (d) => (stderr += String(d)))
  const line = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      host.kill("SIGKILL")
      reject(new Error(`the host did not report in time: ${stderr}`))
    }, timeoutMs)
    createInterface({ input: host.stdout }).once("line", (l) => {
      clearTimeout(timer)
      resolve(l)
    })
  })
  return { host, info: JSON.parse(line) as A }
}
