/**
 * How the views read: once and again every so often (`useLoaded`), or a window of a
 * thread read again whenever the thread's events say it changed (`useFollowed`).
 */
import { useEffect, useState } from "preact/hooks"
import type { Rpc } from "./Rpc.js"

export interface Loaded<A> {
  readonly value?: A
  readonly error?: string
}

/**
 * A page of a thread (`thread.get` with a window), read now and again as the thread's
 * events come (`thread.events` from the page's sequence, followed for as long as the view
 * is open), at most four times a second however fast they come.
 */
export const useFollowed = <A extends { readonly page?: { readonly sequence: number } | undefined }>(
  rpc: Rpc,
  threadId: string,
  load: () => Promise<A>,
  keys: ReadonlyArray<unknown>
): Loaded<A> => {
  const [state, setState] = useState<Loaded<A>>({})
  useEffect(() => {
    let live = true
    let queued: ReturnType<typeof setTimeout> | undefined
    let stop: (() => void) | undefined
    const once = (): Promise<void> =>
      load().then(
        (value) => {
          if (!live) return
          setState({ value })
          stop ??= rpc.stream("thread.events", { threadId, fromSequence: value.page?.sequence ?? 0 }, soon)
        },
        (error: Error) => {
          if (live) setState({ error: error.message })
        }
      )
    const soon = () => {
      queued ??= setTimeout(() => {
        queued = undefined
        void once()
      }, 250)
    }
    void once()
    return () => {
      live = false
      if (queued !== undefined) clearTimeout(queued)
      stop?.()
    }
  }, keys)
  return state
}

/** Loads `load` now and every `everyMs` (if given), keeping the last answer or error. */
export const useLoaded = <A>(load: () => Promise<A>, keys: ReadonlyArray<unknown>, everyMs?: number): Loaded<A> => {
  const [state, setState] = useState<Loaded<A>>({})
  useEffect(() => {
    let live = true
    const once = () =>
      load().then(
        (value) => live && setState({ value }),
        (error: Error) => live && setState({ error: error.message })
      )
    void once()
    const timer = everyMs === undefined ? undefined : setInterval(once, everyMs)
    return () => {
      live = false
      if (timer !== undefined) clearInterval(timer)
    }
  }, keys)
  return state
}
