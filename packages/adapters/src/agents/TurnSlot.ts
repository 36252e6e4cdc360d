/**
 * The turn slots of a session: at most one running turn per native thread. A turn is
 * released only by its own holder, so a late release of an ended turn never frees the
 * slot of the next one.
 */
export interface TurnSlots<T> {
  /** The running turn of `thread`, if any. */
  readonly current: (thread: string) => T | undefined
  /** Takes the slot of `thread` for `turn`; false when a turn is running there already. */
  readonly claim: (thread: string, turn: T) => boolean
  /** Frees the slot of `thread` if `turn` holds it. */
  readonly release: (thread: string, turn: T) => void
  /** Frees every slot; the turns that held one. */
  readonly drain: () => ReadonlyArray<readonly [string, T]>
}

export const makeTurnSlots = <T>(): TurnSlots<T> => {
  const running = new Map<string, T>()
  return {
    current: (thread) => running.get(thread),
    claim: (thread, turn) => {
      if (running.has(thread)) return false
      running.set(thread, turn)
      return true
    },
    release: (thread, turn) => {
      if (running.get(thread) === turn) running.delete(thread)
    },
    drain: () => {
      const all = [...running]
      running.clear()
      return all
    }
  }
}
