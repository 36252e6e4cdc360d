/**
 * Connections that go wrong: a follower whose daemon restarts resumes through the
 * typed client with no gap or duplicate, and a follower that stops reading is
 * disconnected rather than buffered without bound.
 */
import * as Path from "node:path"
import { createRequire } from "node:module"
import { describe, expect, it } from "@effect/vitest"
import { CommandId, ProviderName, type StoredEvent, type ThreadId } from "@skein/domain"
import { followThread, makeSkeinClient } from "@skein/server"
import { Effect, Fiber, Schedule, Stream } from "effect"
import { childEnv, requestFrame, tempDir, trackDaemons, withServer } from "./support.js"

const start = trackDaemons()

describe("resilience", () => {
  it.live(
    "followThread resumes across a daemon restart with no gap or duplicate",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const home = tempDir("skein-resume-")
          const db = Path.join(home, "skein.db")
          const first = yield* Effect.promise(() => start(["--port", "0", "--db", db], childEnv(home)))
          const port = new URL(first.url).port
          // the daemon's generated token, from the token file of its home
          const client = yield* makeSkeinClient({ url: first.url, dataDir: home })
          const thread = yield* client.thread.create({ title: "resume" })
          // run.start is idempotent by commandId, so retrying one whose connection
          // dropped cannot start a second run.
          const run = (ordinal: number) =>
            client.run
              .start({
                threadId: thread.id,
                provider: ProviderName.make("alpha"),
                message: `run ${ordinal}`,
                commandId: CommandId.make(`resume-run-${ordinal}`),
                wait: true
              })
              .pipe(
                Effect.retry({ while: (e) => e._tag === "RpcClientError", schedule: Schedule.spaced("200 millis") }),
                Effect.timeout("30 seconds")
              )

          const follower = yield* followThread(client, { threadId: thread.id as ThreadId }).pipe(
            Stream.takeUntil((e) => e.event._tag === "RunEnded" && e.event.run.ordinal === 3),
            Stream.runCollect,
            Effect.timeout("60 seconds"),
            Effect.fork
          )
          yield* run(1)
          // The daemon goes away and comes back on the same port and database.
          process.kill(first.child.pid!, "SIGTERM")
          const exit = yield* Effect.promise(() => first.exited)
          expect(exit.code).toBe(0)
          // Meanwhile requests fail fast with a transport error instead of hanging.
          const down = yield* client.thread.get({ threadId: thread.id }).pipe(Effect.flip, Effect.timeout("5 seconds"))
          expect(down._tag).toBe("RpcClientError")
          yield* Effect.promise(() => start(["--port", port, "--db", db], childEnv(home)))
          yield* run(2)
          yield* run(3)

          const events: ReadonlyArray<StoredEvent> = Array.from(yield* Fiber.join(follower))
          const sequences = events.map((e) => e.threadSequence)
          expect(sequences).toEqual(Array.from({ length: sequences.length }, (_, i) => i + 1))
          const ended = events.flatMap((e) => (e.event._tag === "RunEnded" ? [e.event.run.ordinal] : []))
          expect(ended).toEqual([1, 2, 3])
        })
      ),
    90_000
  )

  it.live(
    "a follower that stops reading is disconnected once its unsent backlog passes the limit",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const server = yield* withServer({ maxBufferedBytes: 256 * 1024 })
          const client = yield* makeSkeinClient({ url: server.url })
          const thread = yield* client.thread.create({ title: "slow reader" })

          // A raw follower that reads its replay, then stops reading from the socket.
          const slow = yield* Effect.acquireRelease(
            Effect.async<RawFollower>((resume) => {
              const socket = new WS(server.url)
              const follower: RawFollower = { socket, closed: undefined }
              socket.on("open", () => socket.send(requestFrame("1", "thread.events", { threadId: thread.id })))
              socket.once("message", () => {
                socket.pause()
                resume(Effect.succeed(follower))
              })
              socket.on("close", (code: number, reason: Buffer) => {
                follower.closed = { code, reason: reason.toString() }
              })
            }),
            (follower) => Effect.sync(() => follower.socket.terminate())
          )
          // Large messages fill the kernel's socket buffers, then the server's backlog.
          const big = "x".repeat(1_000_000)
          for (let i = 1; i <= 20; i++) {
            yield* client.run.start({
              threadId: thread.id,
              provider: ProviderName.make("codex"),
              message: `${i} ${big}`,
              wait: true
            })
          }
          // Reading again, it gets what was sent before the server gave up, then the close.
          slow.socket.resume()
          yield* Effect.sleep("100 millis").pipe(Effect.repeat({ until: () => slow.closed !== undefined, times: 100 }))
          expect(slow.closed?.code).toBe(1008)
          expect(slow.closed?.reason).toMatch(/too slowly/)
          // Everyone else is still served.
          const view = yield* client.thread.get({ threadId: thread.id })
          expect(view.runs.length).toBeGreaterThanOrEqual(1)
        })
      ),
    90_000
  )
})

interface RawSocket {
  on(event: string, f: (...args: Array<any>) => void): void
  once(event: string, f: (...args: Array<any>) => void): void
  send(data: string): void
  pause(): void
  resume(): void
  terminate(): void
}
interface RawFollower {
  readonly socket: RawSocket
  closed: { readonly code: number; readonly reason: string } | undefined
}
const WS = createRequire(import.meta.url)("ws") as new (url: string) => RawSocket
