/**
 * Test support for the server suites: the `skein` binary as a child process (argument
 * arrays, scoped env, ended by PID), a raw WebSocket for frames the typed client would
 * never send, and temp directories.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { makeRuntimeLayer } from "@skein/runtime"
import { demoRegistryLayer, serveWebSocket, type WebSocketServerOptions } from "@skein/server"
import { Effect, Layer } from "effect"
import { afterEach } from "vitest"

/** The `skein` executable as `npx skein` runs it: the bundle that `npm run build` makes. */
export const binPath = fileURLToPath(new URL("../../packages/server/bin/skein.js", import.meta.url))

export const tempDir = (prefix: string): string => Fs.mkdtempSync(Path.join(Os.tmpdir(), prefix))

export const childEnv = (home: string, extra: Record<string, string> = {}): Record<string, string> => ({
  PATH: process.env["PATH"] ?? "/usr/bin:/bin",
  HOME: home,
  SKEIN_HOME: home,
  ...extra
})

export interface RunResult {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs `file ARGS` to completion, `stdin` as its input (killed by PID after `timeoutMs`). */
export const runProcess = (
  file: string,
  args: ReadonlyArray<string>,
  env: Record<string, string>,
  options: { readonly stdin?: string; readonly timeoutMs?: number } = {}
): Promise<RunResult> =>
  new Promise((resolve, reject) => {
    const child = spawn(file, args, { env, stdio: [options.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()))
    child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()))
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 20_000)
    child.on("error", reject)
    child.on("close", (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout, stderr })
    })
    if (options.stdin !== undefined) child.stdin!.end(options.stdin)
  })

/** Runs `skein ARGS` to completion (killed by PID after `timeoutMs`). */
export const runSkein = (
  args: ReadonlyArray<string>,
  env: Record<string, string>,
  timeoutMs = 20_000
): Promise<RunResult> => runProcess(process.execPath, [binPath, ...args], env, { timeoutMs })

export interface DaemonProcess {
  readonly child: ChildProcess
  readonly url: string
  readonly stdout: () => string
  readonly stderr: () => string
  /** Resolves with the exit code once the process has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** SIGKILL by PID if still running. */
  readonly kill: () => void
}

/**
 * Starts `skein daemon ARGS` and waits for its `skein listening on URL` line
 * (`nodeArgs` go to node itself, before the script).
 */
export const startDaemon = (
  args: ReadonlyArray<string>,
  env: Record<string, string>,
  timeoutMs = 20_000,
  nodeArgs: ReadonlyArray<string> = []
): Promise<DaemonProcess> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, binPath, "daemon", ...args], {
      env,
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) =>
      child.on("exit", (code, signal) => res({ code, signal }))
    )
    const kill = () => {
      if (child.exitCode === null && child.signalCode === null && child.pid !== undefined)
        process.kill(child.pid, "SIGKILL")
    }
    const timer = setTimeout(() => {
      kill()
      reject(new Error(`daemon did not print its listening line within ${timeoutMs} ms; stderr: ${stderr}`))
    }, timeoutMs)
    child.stdout!.on("data", (d: Buffer) => {
      stdout += d.toString()
      const match = /^skein listening on (\S+)$/m.exec(stdout)
      if (match) {
        clearTimeout(timer)
        resolve({ child, url: match[1]!, stdout: () => stdout, stderr: () => stderr, exited, kill })
      }
    })
    child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()))
    void exited.then(({ code }) => {
      clearTimeout(timer)
      reject(new Error(`daemon exited (${code}) before listening; stderr: ${stderr}`))
    })
  })

/** `startDaemon` for a test file: every daemon it started is killed by PID after each test. */
export const trackDaemons = () => {
  const daemons: Array<DaemonProcess> = []
  afterEach(() => {
    for (const d of daemons.splice(0)) d.kill()
  })
  return async (
    args: ReadonlyArray<string>,
    env: Record<string, string>,
    nodeArgs: ReadonlyArray<string> = []
  ): Promise<DaemonProcess> => {
    const d = await startDaemon(args, env, 20_000, nodeArgs)
    daemons.push(d)
    return d
  }
}

/** A runtime with the demo's codex and claude instances, served in-process on a free port. */
export const withServer = (options: Omit<WebSocketServerOptions, "port"> = {}) =>
  Effect.gen(function* () {
    const dir = tempDir("skein-rpc-")
    const runtime = yield* Layer.build(
      makeRuntimeLayer({ dbPath: Path.join(dir, "skein.db") }).pipe(Layer.provide(demoRegistryLayer(dir)))
    )
    return yield* serveWebSocket({ ...options, port: 0 }).pipe(Effect.provide(runtime))
  })

/** `ws`, which @effect/platform-node already depends on; tests use it untyped for raw frames. */
const WS = createRequire(import.meta.url)("ws") as new (
  url: string,
  options?: { headers?: Record<string, string> }
) => {
  on(event: string, f: (...args: Array<any>) => void): void
  send(data: string): void
  close(): void
  terminate(): void
}

/** The token a daemon started without --token generated in its home. */
export const tokenIn = (home: string): string => Fs.readFileSync(Path.join(home, "token"), "utf8").trim()

/**
 * Tries a WebSocket upgrade: "open" if it became a socket, else the HTTP status and
 * body of the refusal.
 */
export const tryUpgrade = (
  url: string,
  headers: Record<string, string> = {},
  timeoutMs = 5_000
): Promise<"open" | { readonly status: number; readonly body: string }> =>
  new Promise((resolve, reject) => {
    const ws = new WS(url, { headers })
    const timer = setTimeout(() => {
      ws.terminate()
      reject(new Error(`no answer to the upgrade of ${url} within ${timeoutMs} ms`))
    }, timeoutMs)
    ws.on("open", () => {
      clearTimeout(timer)
      ws.close()
      resolve("open")
    })
    ws.on("unexpected-response", (_request: unknown, response: any) => {
      let body = ""
      response.on("data", (d: Buffer) => (body += d.toString()))
      response.on("end", () => {
        clearTimeout(timer)
        resolve({ status: response.statusCode, body })
      })
    })
    ws.on("error", (e: Error) => {
      clearTimeout(timer)
      reject(e)
    })
  })

/**
 * Opens a raw WebSocket, sends `frames` one by one, and collects text frames until
 * `expected` replies arrived (or `timeoutMs`).
 */
export const rawExchange = (
  url: string,
  frames: ReadonlyArray<string>,
  expected: number,
  options: { headers?: Record<string, string>; timeoutMs?: number } = {}
): Promise<Array<any>> =>
  new Promise((resolve, reject) => {
    const ws = new WS(url, options.headers === undefined ? {} : { headers: options.headers })
    const replies: Array<any> = []
    const done = () => {
      clearTimeout(timer)
      ws.close()
      resolve(replies)
    }
    const timer = setTimeout(done, options.timeoutMs ?? 5_000)
    ws.on("open", () => frames.forEach((f) => ws.send(f)))
    ws.on("message", (data: Buffer) => {
      replies.push(JSON.parse(data.toString()))
      if (replies.length >= expected) done()
    })
    ws.on("error", (e: Error) => {
      clearTimeout(timer)
      reject(e)
    })
  })

export const requestFrame = (id: string, tag: string, payload: unknown): string =>
  JSON.stringify({ _tag: "Request", id, tag, payload, headers: [] })
