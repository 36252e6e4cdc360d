/**
 * A daemon for the benches that need one: `skein daemon --port 0 ARGS` from the bundle in
 * a home of the bench's own, its url once it listens, its pid, and a stop that ends it by
 * PID (SIGTERM, then SIGKILL after 5 s), or a SIGKILL at once (`kill`).
 */
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"

/** The bundled `skein` executable. */
export const bin = fileURLToPath(new URL("../../../packages/server/bin/skein.js", import.meta.url))

/** Starts `skein daemon --port 0 ARGS` from the bundle; its url and pid, and a stop and a kill by PID. */
export const startDaemon = (
  home: string,
  args: ReadonlyArray<string> = [],
  env: Readonly<Record<string, string>> = {}
) =>
  new Promise<{
    readonly url: string
    readonly pid: number
    readonly stop: () => Promise<void>
    readonly kill: () => Promise<void>
  }>((resolve, reject) => {
    const child = spawn(process.execPath, [bin, "daemon", "--port", "0", ...args], {
      env: { PATH: process.env.PATH ?? "", HOME: home, SKEIN_HOME: home, ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    const exited = new Promise<void>((done) => child.on("exit", () => done()))
    const stop = async () => {
      if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return
      process.kill(child.pid, "SIGTERM")
      const timer = setTimeout(() => {
        if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, "SIGKILL")
      }, 5_000)
      await exited
      clearTimeout(timer)
    }
    const timer = setTimeout(() => {
      void stop()
      reject(new Error(`the daemon did not listen within 20 s: ${stderr}`))
    }, 20_000)
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString()
      const match = /^skein listening on (\S+)$/m.exec(stdout)
      if (match !== null) {
        clearTimeout(timer)
        const kill = async () => {
          if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, "SIGKILL")
          await exited
        }
        resolve({ url: match[1]!, pid: child.pid!, stop, kill })
      }
    })
    void exited.then(() => {
      clearTimeout(timer)
      reject(new Error(`the daemon exited before listening: ${stderr}`))
    })
  })
