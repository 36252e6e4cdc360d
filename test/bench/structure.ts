/**
 * What a piece of work is made of in Effect's terms, counted rather than timed: the
 * fibers it starts and the tasks it hands Effect's scheduler (each task a hop through
 * the microtask queue before the fiber it wakes or starts goes on). Where a side's time
 * goes when two sides run the same commands at different speeds.
 *
 * Fibers are counted by the ids Effect gives them in order (`FiberId.unsafeMake`, called
 * once per fiber started); tasks by wrapping the default scheduler's `scheduleTask` for
 * the count's length. Both counters are global to a version of Effect, so two checkouts
 * on the same version share them: count one side at a time, with nothing else running.
 */
import type { FiberId } from "effect"
import type { Side } from "./sides.js"

export interface Structure {
  /** Fibers started per call. */
  readonly fibers: number
  /** Tasks handed to the scheduler per call. */
  readonly tasks: number
}

/** The fibers and scheduler tasks per call of `body` (awaited `count` times in a row), as `effect` (a side's copy of Effect) counts them. */
export const structureOf = async (
  effect: Pick<Side["E"], "FiberId" | "Scheduler">,
  count: number,
  body: () => Promise<unknown>
): Promise<Structure> => {
  const { FiberId: Ids, Scheduler } = effect
  const scheduler = Scheduler.defaultScheduler
  const nextId = () => (Ids.unsafeMake() as FiberId.Runtime).id
  const schedule = scheduler.scheduleTask
  let tasks = 0
  scheduler.scheduleTask = function (this: typeof scheduler, ...args: Parameters<typeof schedule>) {
    tasks++
    return schedule.apply(this, args)
  }
  try {
    const first = nextId()
    for (let i = 0; i < count; i++) await body()
    // The second look made an id too.
    return { fibers: (nextId() - first - 1) / count, tasks: tasks / count }
  } finally {
    scheduler.scheduleTask = schedule
  }
}
