/**
 * The shared part of the mock model servers: an HTTP server on 127.0.0.1 (an
 * ephemeral port) that records every request (method, path, headers, parsed JSON
 * body) in memory and, when asked, as JSON lines in a log file. It stops by itself
 * after `maxLifetimeMs` if nobody closed it, and a reply never waits longer than
 * `MAX_DELAY_MS`.
 */
import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

export interface CapturedRequest {
  readonly seq: number
  readonly method: string
  readonly path: string
  readonly headers: Http.IncomingHttpHeaders
  readonly body: any
  readonly receivedAt: number
}

export interface MockServer {
  readonly url: string
  readonly port: number
  readonly requests: ReadonlyArray<CapturedRequest>
  /** Resolves with the first request (from `fromSeq` on) that satisfies `test`. */
  readonly waitFor: (
    test: (request: CapturedRequest) => boolean,
    timeoutMs?: number,
    fromSeq?: number
  ) => Promise<CapturedRequest>
  readonly close: () => Promise<void>
}

/** No reply is held longer than this, whatever a directive asks. */
export const MAX_DELAY_MS = 30_000

export type Responder = (
  request: CapturedRequest,
  res: Http.ServerResponse,
  signal: AbortSignal
) => void | Promise<void>

export const startMockServer = (
  respond: Responder,
  options: { readonly logFile?: string | undefined; readonly maxLifetimeMs?: number | undefined } = {}
): Promise<MockServer> =>
  new Promise((resolve, reject) => {
    const requests: Array<CapturedRequest> = []
    const watchers = new Set<() => void>()
    const sockets = new Set<import("node:net").Socket>()
    const server = Http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      let size = 0
      req.on("data", (chunk: Buffer) => {
        size += chunk.length
        if (size <= 64 * 1024 * 1024) chunks.push(chunk)
      })
      req.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        let body: any = null
        try {
          body = text.length > 0 ? JSON.parse(text) : null
        } catch {
          body = { unparsed: text.slice(0, 2000) }
        }
        const captured: CapturedRequest = {
          seq: requests.length,
          method: req.method ?? "",
          path: req.url ?? "",
          headers: req.headers,
          body,
          receivedAt: Date.now()
        }
        requests.push(captured)
        if (options.logFile !== undefined) Fs.appendFileSync(options.logFile, `${JSON.stringify(captured)}\n`)
        for (const watcher of watchers) watcher()
        const abort = new AbortController()
        res.on("close", () => abort.abort())
        Promise.resolve(respond(captured, res, abort.signal)).catch((error) => {
          if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" })
          res.end(JSON.stringify({ error: { message: String(error) } }))
        })
      })
    })
    server.on("connection", (socket) => {
      sockets.add(socket)
      socket.on("close", () => sockets.delete(socket))
    })
    let closing: Promise<void> | null = null
    const close = () =>
      (closing ??= new Promise<void>((done) => {
        clearTimeout(lifetime)
        server.close(() => done())
        for (const socket of sockets) socket.destroy()
      }))
    const lifetime = setTimeout(() => void close(), options.maxLifetimeMs ?? 20 * 60_000)
    lifetime.unref()
    server.on("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resolve({
        url: `http://127.0.0.1:${port}`,
        port,
        requests,
        waitFor: (test, timeoutMs = 20_000, fromSeq = 0) =>
          new Promise((found, fail) => {
            const check = () => {
              const hit = requests.slice(fromSeq).find(test)
              if (hit === undefined) return false
              watchers.delete(check)
              clearTimeout(timer)
              found(hit)
              return true
            }
            const timer = setTimeout(() => {
              watchers.delete(check)
              fail(new Error(`mock server: no matching request within ${timeoutMs} ms`))
            }, timeoutMs)
            watchers.add(check)
            check()
          }),
        close
      })
    })
  })

/** `[[name:ARG]]` directives in a prompt. */
export const directive = (text: string, name: string): string | null => {
  const match = new RegExp(`\\[\\[${name}(?::([^\\]]*))?\\]\\]`).exec(text)
  return match === null ? null : (match[1] ?? "")
}

/** Waits `ms` (at most MAX_DELAY_MS), or less if the client goes away. */
export const delay = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((done) => {
    const timer = setTimeout(done, Math.min(Math.max(ms, 0), MAX_DELAY_MS))
    signal.addEventListener("abort", () => {
      clearTimeout(timer)
      done()
    })
  })
