/**
 * One raw WebSocket kept open across exchanges, for frames the typed client would
 * never send: send text, collect every JSON reply, wait (bounded) for a condition.
 */
import { createRequire } from "node:module"

interface RawSocket {
  on(event: string, f: (...args: Array<any>) => void): void
  send(data: string, callback?: (error?: Error) => void): void
  close(): void
  terminate(): void
  readonly readyState: number
}
const WS = createRequire(import.meta.url)("ws") as new (
  url: string,
  options?: { headers?: Record<string, string>; maxPayload?: number }
) => RawSocket

export interface RawSession {
  readonly replies: Array<any>
  /** Sends one frame; resolves once it is handed to the socket. */
  readonly send: (frame: string) => Promise<void>
  readonly until: (condition: () => boolean, timeoutMs: number, what: string) => Promise<void>
  /** The close code and reason, once the server closed the socket. */
  readonly closed: () => { readonly code: number; readonly reason: string } | undefined
  readonly close: () => void
}

export const openRawSession = (url: string, headers: Record<string, string> = {}): Promise<RawSession> =>
  new Promise((resolve, reject) => {
    const ws = new WS(url, { headers, maxPayload: 256 * 1024 * 1024 })
    const replies: Array<any> = []
    let closed: { code: number; reason: string } | undefined
    ws.on("message", (data: Buffer) => replies.push(JSON.parse(data.toString())))
    ws.on("close", (code: number, reason: Buffer) => (closed = { code, reason: reason.toString() }))
    ws.on("error", reject)
    ws.on("open", () =>
      resolve({
        replies,
        send: (frame) => new Promise((done, fail) => ws.send(frame, (error) => (error ? fail(error) : done()))),
        until: async (condition, timeoutMs, what) => {
          const deadline = Date.now() + timeoutMs
          while (!condition()) {
            if (closed !== undefined)
              throw new Error(`the server closed the socket (${closed.code} ${closed.reason}) waiting for ${what}`)
            if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
            await new Promise((r) => setTimeout(r, 5))
          }
        },
        closed: () => closed,
        close: () => ws.terminate()
      })
    )
  })
