/**
 * The inspector's connection to the daemon: Skein's RPC over the daemon's WebSocket, the
 * same frames every client sends. The token goes as a WebSocket subprotocol
 * (`skein.token.TOKEN`, beside `skein`): a page cannot set headers, and the token stays
 * out of every URL the browser sends.
 */
export interface Rpc {
  readonly call: <A>(tag: string, payload: unknown) => Promise<A>
  /** A stream method (`thread.events`): `onValues` gets each chunk; the returned function ends it. */
  readonly stream: (tag: string, payload: unknown, onValues: (values: ReadonlyArray<unknown>) => void) => () => void
  readonly close: () => void
}

interface Waiting {
  readonly resolve: (value: never) => void
  readonly reject: (error: Error) => void
}

/** A failure's message, from the Exit frame's cause (a typed error's `message`, else its tag). */
const describe = (cause: unknown): string => {
  const seen = cause as { _tag?: string; error?: { message?: string; _tag?: string }; left?: unknown }
  if (seen?._tag === "Fail") return seen.error?.message ?? seen.error?._tag ?? "failed"
  if (seen?._tag === "Sequential" || seen?._tag === "Parallel") return describe(seen.left)
  return seen?._tag === "Interrupt" ? "interrupted" : "Skein failed to answer"
}

export const connect = (url: string, token: string): Promise<Rpc> =>
  new Promise((resolve, reject) => {
    const socket = new WebSocket(url, ["skein", `skein.token.${token}`])
    const waiting = new Map<string, Waiting>()
    const streams = new Map<string, (values: ReadonlyArray<unknown>) => void>()
    let next = 0
    const send = (frame: unknown) => {
      if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(frame))
    }
    let open = false
    const failAll = (why: string) => {
      for (const entry of waiting.values()) entry.reject(new Error(why))
      waiting.clear()
    }
    socket.onopen = () => {
      open = true
      resolve({
        call: <A>(tag: string, payload: unknown) =>
          new Promise<A>((res, rej) => {
            const id = String(++next)
            waiting.set(id, { resolve: res as (value: never) => void, reject: rej })
            send({ _tag: "Request", id, tag, payload, headers: [] })
          }),
        stream: (tag, payload, onValues) => {
          const id = String(++next)
          streams.set(id, onValues)
          send({ _tag: "Request", id, tag, payload, headers: [] })
          return () => {
            if (streams.delete(id)) send({ _tag: "Interrupt", requestId: id })
          }
        },
        close: () => socket.close()
      })
    }
    socket.onclose = (event) => {
      const why = `the connection to Skein closed (${event.code}${event.reason ? `: ${event.reason}` : ""})`
      failAll(why)
      if (!open) reject(new Error(why))
    }
    socket.onmessage = (event) => {
      const frame = JSON.parse(String(event.data)) as {
        _tag: string
        requestId?: string
        exit?: { _tag: string; value?: unknown; cause?: unknown }
      }
      if (frame._tag === "Chunk" && frame.requestId !== undefined) {
        streams.get(frame.requestId)?.((frame as { values?: ReadonlyArray<unknown> }).values ?? [])
      } else if (frame._tag === "Exit" && frame.requestId !== undefined && streams.has(frame.requestId)) {
        streams.delete(frame.requestId)
      } else if (frame._tag === "Exit" && frame.requestId !== undefined) {
        const entry = waiting.get(frame.requestId)
        waiting.delete(frame.requestId)
        if (frame.exit?._tag === "Success") entry?.resolve(frame.exit.value as never)
        else entry?.reject(new Error(describe(frame.exit?.cause)))
      } else if (frame._tag === "Defect") {
        failAll("Skein refused a request of this page")
      }
    }
  })
