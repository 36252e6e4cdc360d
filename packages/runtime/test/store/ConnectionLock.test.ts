/**
 * The connection's lock: a section that never yields runs within the call when nobody
 * holds the lock, and otherwise in its turn, in order; whoever gives up waiting
 * (interrupted) leaves the lock as it found it. Over a real connection: a direct
 * transaction started while a `SqlClient` transaction is between statements commits
 * after it, and the store's followers hear of commits in their order.
 */
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Deferred, Effect, Fiber } from "effect"
import * as Sqlite from "../../src/store/Sqlite.js"
import { StoreDb } from "../../src/store/StoreDb.js"

/** A `SqlClient` transaction holding the connection until `release` is done. */
const holdConnection = (release: Deferred.Deferred<void>, held: Deferred.Deferred<void>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql.withTransaction(Effect.zipRight(Deferred.succeed(held, undefined), Deferred.await(release)))
  })

describe("the connection's lock", () => {
  it.effect("runs a section at once when the lock is free, and waits its turn when it is held", () =>
    Effect.gen(function* () {
      const direct = yield* StoreDb
      const order: Array<string> = []
      // Free: the transaction runs within the call (runSync would fail on any wait).
      expect(
        Effect.runSync(
          direct.transaction(function* () {
            return "free"
          })
        )
      ).toBe("free")

      // Held across a wait: sections queue behind the holder, in the order they asked.
      const release = yield* Deferred.make<void>()
      const held = yield* Deferred.make<void>()
      const holder = yield* Effect.fork(holdConnection(release, held))
      yield* Deferred.await(held)
      const first = yield* Effect.fork(
        direct.transaction(function* () {
          return order.push("first")
        })
      )
      const second = yield* Effect.fork(
        direct.transaction(function* () {
          return order.push("second")
        })
      )
      yield* Effect.yieldNow()
      expect(order).toEqual([])
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holder)
      yield* Fiber.join(first)
      yield* Fiber.join(second)
      expect(order).toEqual(["first", "second"])
      // Everyone let go: free again.
      expect(
        Effect.runSync(
          direct.transaction(function* () {
            return "free"
          })
        )
      ).toBe("free")
    }).pipe(Effect.provide(Sqlite.layer(":memory:")))
  )

  it.effect("a waiter that is interrupted, and a scoped hold, leave the lock free", () =>
    Effect.gen(function* () {
      const direct = yield* StoreDb
      const release = yield* Deferred.make<void>()
      const held = yield* Deferred.make<void>()
      const holder = yield* Effect.fork(holdConnection(release, held))
      yield* Deferred.await(held)
      let ran = false
      const waiter = yield* Effect.fork(
        direct.transaction(function* () {
          ran = true
        })
      )
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(waiter)
      expect(ran).toBe(false)
      const next = yield* Effect.fork(
        direct.transaction(function* () {
          return "next"
        })
      )
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holder)
      expect(yield* Fiber.join(next)).toBe("next")
      expect(ran).toBe(false)
      expect(
        Effect.runSync(
          direct.transaction(function* () {
            return "free"
          })
        )
      ).toBe("free")

      // A hold interrupted while it waits for the connection gives up its place.
      const release2 = yield* Deferred.make<void>()
      const held2 = yield* Deferred.make<void>()
      const holder2 = yield* Effect.fork(holdConnection(release2, held2))
      yield* Deferred.await(held2)
      const sql = yield* SqlClient.SqlClient
      // `reserve` is what a `SqlClient` transaction takes the connection with.
      const blocked = yield* Effect.fork(Effect.scoped(sql.reserve))
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(blocked)
      yield* Deferred.succeed(release2, undefined)
      yield* Fiber.join(holder2)
      expect(
        Effect.runSync(
          direct.transaction(function* () {
            return "free"
          })
        )
      ).toBe("free")
    }).pipe(Effect.provide(Sqlite.layer(":memory:")))
  )
})

describe("the connection's two faces share the lock", () => {
  it.effect("a direct transaction waits for a SqlClient transaction between its statements", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const direct = yield* StoreDb
      yield* sql.unsafe("CREATE TABLE log (n INTEGER NOT NULL)")
      const between = yield* Deferred.make<void>()
      const resume = yield* Deferred.make<void>()
      const reader = yield* Effect.fork(
        Effect.gen(function* () {
          yield* sql.unsafe("INSERT INTO log (n) VALUES (1)")
          yield* Deferred.succeed(between, undefined)
          yield* Deferred.await(resume)
          yield* sql.unsafe("INSERT INTO log (n) VALUES (2)")
        }).pipe(sql.withTransaction)
      )
      yield* Deferred.await(between)
      const published: Array<number> = []
      const writer = yield* Effect.fork(
        direct.transaction(
          function* (db) {
            return (yield* db.all("INSERT INTO log (n) VALUES (3) RETURNING n")).length
          },
          () => void published.push(3)
        )
      )
      yield* Effect.yieldNow()
      // Still waiting: the SqlClient transaction holds the connection.
      expect(published).toEqual([])
      yield* Deferred.succeed(resume, undefined)
      yield* Fiber.join(reader)
      expect(yield* Fiber.join(writer)).toBe(1)
      expect(published).toEqual([3])
      const rows = yield* sql.unsafe<{ readonly n: number }>("SELECT n FROM log ORDER BY rowid")
      expect(rows.map((r) => r.n)).toEqual([1, 2, 3])
    }).pipe(Effect.provide(Sqlite.layer(":memory:")))
  )
})
