/**
 * Where this process serves Skein's RPC: the daemon's url once its server listens, null
 * before then and in a host that serves none. In a cluster, the runner that holds a
 * thread answers with it when asked where the thread lives (`thread.locate`), so that a
 * client may send the thread's requests there and save the hop between runners.
 */
import { Context, Layer } from "effect"

export interface ServedAtShape {
  readonly url: () => string | null
  readonly set: (url: string | null) => void
}

export class ServedAt extends Context.Tag("@skein/runtime/ServedAt")<ServedAt, ServedAtShape>() {}

export const make = (): ServedAtShape => {
  let current: string | null = null
  return {
    url: () => current,
    set: (url) => {
      current = url
    }
  }
}

export const layer: Layer.Layer<ServedAt> = Layer.sync(ServedAt, make)
