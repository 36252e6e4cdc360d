/**
 * When a thread was last active (pure): its own record changes only when it is renamed,
 * but the thread is updated whenever a run of it starts, ends or is rolled back, so
 * its `updatedAt` as views show it is the later of the record's and its last run's.
 */
import type { AppThread, Run } from "@skein/domain"

/** A run's timestamps: when it was created, started, ended or rolled back. */
export const runTimestamps = (run: Run): ReadonlyArray<string | null | undefined> => [
  run.createdAt,
  run.startedAt,
  run.completedAt,
  run.rolledBackAt
]

/**
 * The thread with `updatedAt` moved to its last run's latest timestamp when that is
 * later (pure): a thread's own record changes only when it is renamed, but the thread is
 * updated whenever a run of it starts, ends or is rolled back.
 */
export const withActivity = (thread: AppThread, timestamps: ReadonlyArray<string | null | undefined>): AppThread => {
  let latest = thread.updatedAt
  for (const at of timestamps) if (typeof at === "string" && at > latest) latest = at
  return latest === thread.updatedAt ? thread : { ...thread, updatedAt: latest }
}
