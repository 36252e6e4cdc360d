/**
 * Commits made by other processes on a shared database (PostgreSQL), told to this
 * process's followers as if they were its own: in order, without gap or duplicate.
 *
 * Each append announces its thread and range of sequences (StoreDb's `announced`). For
 * a thread someone here follows, the events after the last sequence told to its
 * followers are read from the log and told; a notice for a range already told changes
 * nothing. Followers filter what they already have (EventLog.ts), so overlap is harmless.
 *
 * A process listens only while something here follows a thread another process may
 * write (`need`, taken before a follower starts; it waits until the listen is in place);
 * a notice costs every listening process a wake-up, and a runner that only waits on
 * its own threads' runs hears those from its own commits.
 *
 * Notices ride one connection; if it is lost they stop without a word. So every two
 * seconds the followed threads' last sequences are also read, and whatever a lost
 * notice would have brought is read and told then.
 */
import type { StorageError, StoredEvent, ThreadId } from "@skein/domain"
import type { SqlError } from "@effect/sql/SqlError"
import { Duration, Effect, RcRef, Schedule, Stream } from "effect"
import type { Scope } from "effect"
import { fromSqlError } from "./Codec.js"
import type { Followers } from "./Followers.js"
import type { Commit, Sql, StoreDbShape } from "./StoreDb.js"

const PAGE = 500
const POLL_EVERY = "2 seconds"
/** How long a listen outlives its last follower, so that followers coming and going share one. */
const LISTEN_LINGER = Duration.seconds(30)

type Read = (
  threadId: ThreadId,
  afterThreadSequence: number,
  limit: number
) => Effect.Effect<ReadonlyArray<StoredEvent>, StorageError>

/** Tells the thread's followers what the log holds after `after`. */
const catchUp = (read: Read, followers: Followers, threadId: ThreadId, after: number) =>
  Effect.gen(function* () {
    let from = after
    for (;;) {
      const page = yield* read(threadId, from, PAGE)
      followers.notify(threadId, page)
      if (page.length < PAGE) return
      from = page[page.length - 1]!.threadSequence
    }
  })

/** What a notice brings, when someone here follows its thread and it is news. */
const onCommit = (read: Read, followers: Followers) => (commit: Commit) => {
  const threadId = commit.threadId as ThreadId
  const told = followers.told(threadId)
  if (!followers.isFollowed(threadId) || commit.last <= told) return Effect.void
  // Nothing told yet: this commit is the first the followers can miss.
  return catchUp(read, followers, threadId, told > 0 ? told : commit.first - 1)
}

/** The followed threads whose log went on past what was told (a notice lost); each caught up. */
const poll = (sql: Sql, read: Read, followers: Followers) =>
  Effect.gen(function* () {
    const threads = followers.followed().filter((threadId) => followers.told(threadId) > 0)
    for (let i = 0; i < threads.length; i += PAGE) {
      const batch = threads.slice(i, i + PAGE)
      const rows = yield* sql
        .unsafe<{ readonly thread_id: string; readonly last: number }>(
          `SELECT thread_id, MAX(thread_sequence) AS last FROM events WHERE thread_id IN (${batch.map(() => "?").join(", ")}) GROUP BY thread_id`,
          batch
        )
        .pipe(Effect.mapError(fromSqlError("cannot read the followed threads' last sequences")))
      for (const row of rows) {
        const threadId = row.thread_id as ThreadId
        const told = followers.told(threadId)
        if (told > 0 && row.last > told) yield* catchUp(read, followers, threadId, told)
      }
    }
  })

export interface RemoteCommits {
  /**
   * Other processes' commits reach this process's followers while the scope is open:
   * taken before a follower that may be told of them starts, once the listen is in place.
   */
  readonly need: Effect.Effect<void, never, Scope.Scope>
}

/**
 * Tells this process's followers of other processes' commits until the scope closes
 * (nothing where one process writes): heard while some follower needs them, and read
 * again every two seconds for the followed threads.
 */
export const make = (
  db: StoreDbShape,
  read: Read,
  followers: Followers
): Effect.Effect<RemoteCommits, never, Scope.Scope> =>
  Effect.gen(function* () {
    const announced = db.announced
    if (announced === null) return { need: Effect.void }
    const logged =
      (what: string) =>
      <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        Effect.catchAllCause(effect, (cause) => Effect.logWarning(`remote commits: ${what}`, cause))
    const hear = (notices: Stream.Stream<Commit, SqlError>) =>
      Stream.runForEach(notices, (commit) =>
        onCommit(read, followers)(commit).pipe(logged(`cannot read thread ${commit.threadId}'s new events`))
      ).pipe(logged("the notices stopped"))
    const unheard = logged("cannot listen")
    const again = unheard(Effect.scoped(Effect.flatMap(announced, hear)))
    // Listens at once (in place before `need` returns), then again a second after each time the notices stop.
    const listening = yield* RcRef.make({
      acquire: Effect.gen(function* () {
        // Nothing to hear when the listen failed (logged): the next try comes a second later.
        const heard = yield* unheard(Effect.map(announced, hear))
        yield* Effect.forkScoped(Effect.zipRight(heard ?? Effect.void, Effect.forever(Effect.delay(again, "1 second"))))
      }),
      idleTimeToLive: LISTEN_LINGER
    })
    yield* poll(db.sql, read, followers).pipe(
      logged("cannot catch up the followed threads"),
      Effect.repeat(Schedule.spaced(POLL_EVERY)),
      Effect.forkScoped
    )
    return { need: RcRef.get(listening) }
  })
