/**
 * The connection's lock: a section that never yields runs at once when nobody holds or
 * waits for the lock, and otherwise in its turn, in order; whoever gives up waiting
 * (interrupted) leaves the lock as it found it. Then the same over a real connection:
 * a direct transaction started while a `SqlClient` transaction is between statements
 * commits after it, and the store's followers hear of commits in their order.
 */
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Deferred, Effect, Exit, Fiber, Option, Scope } from "effect"
import * as ConnectionLock from "../../src/store/ConnectionLock.js"
import * as Sqlite from "../../src/store/Sqlite.js"

describe("ConnectionLock", () => {
  it.effect("runs a section at once when the lock is free, and waits its turn when it is held", () =>
    Effect.gen(function* () {
      const lock = yield* ConnectionLock.make
      const order: Array<string> = []
      // Free: the section runs within the call, before anything else is scheduled.
      let ran = false
      const free = lock.now(() => Effect.sync(() => void (ran = true)))
      expect(Option.getOrNull(lock.ifFree(() => "free"))).toBe("free")
      yield* free
      expect(ran).toBe(true)

      // Held across a wait: sections queue behind the holder, in the order they asked.
      const release = yield* Deferred.make<void>()
      const holder = yield* Effect.fork(
        lock.withLock(
          Effect.sync(() => order.push("holder")).pipe(
            Effect.zipRight(Deferred.await(release)),
            Effect.zipRight(Effect.sync(() => order.push("holder done")))
          )
        )
      )
      yield* Effect.yieldNow()
      expect(order).toEqual(["holder"])
      expect(Option.isNone(lock.ifFree(() => "free"))).toBe(true)
      const first = yield* Effect.fork(lock.now(() => Effect.succeed(order.push("first"))))
      const second = yield* Effect.fork(lock.now(() => Effect.succeed(order.push("second"))))
      yield* Effect.yieldNow()
      expect(order).toEqual(["holder"])
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(first)
      yield* Fiber.join(second)
      yield* Fiber.join(holder)
      expect(order).toEqual(["holder", "holder done", "first", "second"])
      // Everyone let go: free again.
      expect(Option.getOrNull(lock.ifFree(() => "free"))).toBe("free")
    })
  )

  it.effect("a waiter that is interrupted, and a scoped hold, leave the lock free", () =>
    Effect.gen(function* () {
      const lock = yield* ConnectionLock.make
      const scope = yield* Scope.make()
      yield* Scope.extend(lock.holdInScope, scope)
      expect(Option.isNone(lock.ifFree(() => 1))).toBe(true)
      let ran = false
      const waiter = yield* Effect.fork(lock.now(() => Effect.sync(() => void (ran = true))))
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(waiter)
      expect(ran).toBe(false)
      // The holder still holds it.
      expect(Option.isNone(lock.ifFree(() => 1))).toBe(true)
      const next = yield* Effect.fork(lock.now(() => Effect.succeed("next")))
      yield* Scope.close(scope, Exit.void)
      expect(yield* Fiber.join(next)).toBe("next")
      expect(Option.getOrNull(lock.ifFree(() => "free"))).toBe("free")

      // A hold that is interrupted while it waits gives up its place.
      const scope2 = yield* Scope.make()
      yield* Scope.extend(lock.holdInScope, scope2)
      const blocked = yield* Effect.fork(Effect.scoped(lock.holdInScope))
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(blocked)
      yield* Scope.close(scope2, Exit.void)
      expect(Option.getOrNull(lock.ifFree(() => "free"))).toBe("free")
    })
  )
})

describe("the connection's two faces share the lock", () => {
  it.effect("a direct transaction waits for a SqlClient transaction between its statements", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const direct = yield* Sqlite.SqliteDirect
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
          (db) => db.run("INSERT INTO log (n) VALUES (3)").changes,
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
