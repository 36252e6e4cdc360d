/**
 * The subscriber side of the fan-out bench, run as its own small process (it imports
 * `ws` and nothing of Skein, so its heap and collector stay out of the server's way):
 * `count` raw WebSocket clients follow one thread and note when each event's frame
 * arrives, on the monotonic clock it shares with the server process (`monotonicMs`).
 *
 * Protocol with the parent (IPC): the parent sends `{ url, threadId, count }`; this
 * process answers `{ tag: "ready" }` once every client has its replay; the parent may
 * send `{ tag: "mark" }` when its measurement starts, and sends `{ tag: "last",
 * threadSequence }` once the last event has committed; this process answers `{ tag:
 * "done", seen, cpuMs }` once every client has received that event, and exits. Like
 * the typed client, the clients send no chunk acknowledgements.
 *
 * The 50 clients share one process, so they must not cost what 50 separate clients
 * would not: a client reads the sequence numbers straight from the frame's bytes and
 * notes each arrival in a preallocated array. Parsing every frame into objects (and
 * keeping a pair per event) would make this process collect garbage every couple of
 * runs, its pauses landing in the latency of whichever commit is in flight.
 */
import WebSocket from "ws"
import { monotonicMs as now } from "./stats.js"

export interface SubscribersStart {
  readonly url: string
  readonly threadId: string
  readonly count: number
}

export type SubscribersMessage =
  | { readonly tag: "ready" }
  | {
      readonly tag: "done"
      /** Per client, `[threadSequence, receivedAtMs]` for every event it received. */
      readonly seen: ReadonlyArray<ReadonlyArray<readonly [number, number]>>
      /** CPU time (user + system) of this process since the parent's `mark`. */
      readonly cpuMs: number
    }

/** From the parent: `mark` when the measured window starts; `last` once the last event has committed. */
export type SubscribersControl = { readonly tag: "mark" } | { readonly tag: "last"; readonly threadSequence: number }

const sequenceKey = Buffer.from('"threadSequence":')
const pingTag = Buffer.from('"_tag":"Ping"')
const pong = JSON.stringify({ _tag: "Pong" })

/** Calls `f` with every `threadSequence` in an RPC frame (or array of frames), in order. */
const forEachSequence = (frame: Buffer, f: (threadSequence: number) => void): void => {
  let at = frame.indexOf(sequenceKey)
  while (at !== -1) {
    let i = at + sequenceKey.length
    let n = 0
    for (let c = frame[i]!; c >= 48 && c <= 57; c = frame[++i]!) n = n * 10 + (c - 48)
    f(n)
    at = frame.indexOf(sequenceKey, i)
  }
}

/** Arrival times by thread sequence (NaN: not received), grown as sequences come. */
class Arrivals {
  times = new Float64Array(4096).fill(Number.NaN)
  last = 0
  note(threadSequence: number, at: number): void {
    if (threadSequence >= this.times.length) {
      const grown = new Float64Array(Math.max(threadSequence + 1, this.times.length * 2)).fill(Number.NaN)
      grown.set(this.times)
      this.times = grown
    }
    this.times[threadSequence] = at
    if (threadSequence > this.last) this.last = threadSequence
  }
  pairs(): Array<readonly [number, number]> {
    const out: Array<readonly [number, number]> = []
    for (let s = 0; s <= this.last; s++) if (!Number.isNaN(this.times[s]!)) out.push([s, this.times[s]!])
    return out
  }
}

interface Client {
  readonly arrivals: Arrivals
  readonly close: () => void
}

const follow = (start: SubscribersStart, onReplay: () => void, onEvent: () => void, onError: (e: unknown) => void) => {
  const socket = new WebSocket(start.url)
  const arrivals = new Arrivals()
  let replayed = false
  socket.on("error", onError)
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
  socket.on("message", (data: Buffer) => {
    const at = now()
    if (data.length < 64 && data.includes(pingTag)) socket.send(pong)
    let any = false
    forEachSequence(data, (threadSequence) => {
      arrivals.note(threadSequence, at)
      any = true
    })
    if (!any) return
    if (!replayed) {
      replayed = true
      onReplay()
    }
    onEvent()
  })
  return { arrivals, close: () => socket.close() } satisfies Client
}

const main = (start: SubscribersStart): void => {
  let replayed = 0
  let lastSequence = Number.POSITIVE_INFINITY
  const clients: Array<Client> = []
  const finishIfDone = () => {
    if (!clients.every((c) => c.arrivals.last >= lastSequence)) return
    lastSequence = Number.POSITIVE_INFINITY
    const cpu = process.cpuUsage(marked)
    const cpuMs = Math.round((cpu.user + cpu.system) / 1000)
    for (const c of clients) c.close()
    const seen = clients.map((c) => c.arrivals.pairs())
    process.send!({ tag: "done", seen, cpuMs } satisfies SubscribersMessage, () => process.exit(0))
  }
  process.on("message", (message: SubscribersControl) => {
    if (message.tag === "mark") marked = process.cpuUsage()
    if (message.tag === "last") {
      lastSequence = message.threadSequence
      finishIfDone()
    }
  })
  const onReplay = () => {
    if (++replayed === start.count) process.send!({ tag: "ready" } satisfies SubscribersMessage)
  }
  const onEvent = () => {
    if (lastSequence !== Number.POSITIVE_INFINITY) finishIfDone()
  }
  const onError = (error: unknown) => {
    console.error(`subscribers: ${String(error)}`)
    process.exit(1)
  }
  for (let i = 0; i < start.count; i++) clients.push(follow(start, onReplay, onEvent, onError))
}

let marked = process.cpuUsage()

if (process.send !== undefined) {
  process.once("message", (start: SubscribersStart) => main(start))
  // Bounded: a bench that never finishes must not leave this process behind.
  setTimeout(() => process.exit(2), 120_000).unref()
  process.once("disconnect", () => process.exit(0))
}
