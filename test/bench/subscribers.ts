/**
 * The subscriber side of the fan-out bench, run as its own small process (it imports
 * `ws` and nothing of Skein, so its heap and collector stay out of the server's way):
 * `count` raw WebSocket clients follow one thread and note when each event's frame
 * arrives, on the wall clock shared with the server process (`nowMs`).
 *
 * Protocol with the parent (IPC): the parent sends `{ url, threadId, count, runs }`;
 * this process answers `{ tag: "ready" }` once every client has its replay; the parent
 * may send `{ tag: "mark" }` when its measurement starts; this process answers
 * `{ tag: "done", seen, cpuMs }` once every client has seen run `runs` end, and exits.
 * Like the typed client, the clients send no chunk acknowledgements.
 */
import WebSocket from "ws"
import { nowMs as now } from "./stats.js"

export interface SubscribersStart {
  readonly url: string
  readonly threadId: string
  readonly count: number
  /** The clients stop once the run with this ordinal has ended. */
  readonly runs: number
}

export type SubscribersMessage =
  | { readonly tag: "ready" }
  | {
      readonly tag: "done"
      readonly seen: ReadonlyArray<ReadonlyArray<readonly [number, number]>>
      /** CPU time (user + system) of this process since the parent's `mark`. */
      readonly cpuMs: number
    }

/** Sent by the parent when the measured window starts. */
export interface SubscribersMark {
  readonly tag: "mark"
}

// Only the fields the clients read; the rest of each event is left unparsed by shape.
interface Frame {
  readonly _tag: string
  readonly values?: ReadonlyArray<{
    readonly threadSequence: number
    readonly event: { readonly _tag: string; readonly run?: { readonly ordinal: number } }
  }>
}

const follow = (start: SubscribersStart, onFirstChunk: () => void): Promise<ReadonlyArray<readonly [number, number]>> =>
  new Promise((resolve, reject) => {
    const socket = new WebSocket(start.url)
    const seen: Array<readonly [number, number]> = []
    let replayed = false
    socket.on("error", reject)
    socket.on("open", () =>
      socket.send(
        JSON.stringify({
          _tag: "Request",
          id: "1",
          tag: "thread.events",
          payload: { threadId: start.threadId },
          headers: []
        })
      )
    )
    socket.on("message", (raw) => {
      const at = now()
      const parsed = JSON.parse(String(raw)) as Frame | ReadonlyArray<Frame>
      for (const frame of Array.isArray(parsed) ? (parsed as ReadonlyArray<Frame>) : [parsed as Frame]) {
        if (frame._tag === "Ping") socket.send(JSON.stringify({ _tag: "Pong" }))
        if (frame._tag !== "Chunk" || frame.values === undefined) continue
        if (!replayed) {
          replayed = true
          onFirstChunk()
        }
        for (const e of frame.values) {
          seen.push([e.threadSequence, at])
          if (e.event._tag === "RunEnded" && e.event.run?.ordinal === start.runs) {
            socket.close()
            resolve(seen)
          }
        }
      }
    })
  })

const main = (start: SubscribersStart): void => {
  let replayed = 0
  const clients: Array<Promise<ReadonlyArray<readonly [number, number]>>> = []
  for (let i = 0; i < start.count; i++) {
    clients.push(
      follow(start, () => {
        if (++replayed === start.count) process.send!({ tag: "ready" } satisfies SubscribersMessage)
      })
    )
  }
  void Promise.all(clients).then(
    (seen) => {
      const cpu = process.cpuUsage(marked)
      const cpuMs = Math.round((cpu.user + cpu.system) / 1000)
      process.send!({ tag: "done", seen, cpuMs } satisfies SubscribersMessage, () => process.exit(0))
    },
    (error: unknown) => {
      console.error(`subscribers: ${String(error)}`)
      process.exit(1)
    }
  )
}

let marked = process.cpuUsage()

if (process.send !== undefined) {
  process.once("message", (start: SubscribersStart) => {
    process.on("message", (message: SubscribersMark) => {
      if (message.tag === "mark") marked = process.cpuUsage()
    })
    main(start)
  })
  // Bounded: a bench that never finishes must not leave this process behind.
  setTimeout(() => process.exit(2), 120_000).unref()
  process.once("disconnect", () => process.exit(0))
}
