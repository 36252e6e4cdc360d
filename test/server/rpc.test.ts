/**
 * The RPC over a real WebSocket on 127.0.0.1, against the real runtime (SQLite in a
 * temp dir, scripted providers as child processes): the seed example through the
 * typed client, tokens, bad frames, and 50 followers of one thread.
 */
import { describe, expect, it } from "@effect/vitest"
import { ProviderName, type StoredEvent, ThreadId } from "@skein/domain"
import {
  coverageLines,
  coverageSummary,
  driveSeed,
  HandshakeRefused,
  laneCoverage,
  makeSkeinClient,
  seedExpectedCoverage
} from "@skein/server"
import { Chunk, Effect, Stream } from "effect"
import { rawExchange, requestFrame, tempDir, tryUpgrade, withServer } from "./support.js"

describe("RPC over WebSocket", () => {
  it.live("thread.locate answers the url this daemon serves at; an unknown thread is refused", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const server = yield* withServer()
        const client = yield* makeSkeinClient({ url: server.url })
        const thread = yield* client.thread.create({ title: "here" })
        expect(yield* client.thread.locate({ threadId: thread.id })).toEqual({ url: server.url })
        const missing = yield* Effect.flip(client.thread.locate({ threadId: ThreadId.make("thr_missing") }))
        expect(missing._tag).toBe("ThreadNotFound")
      })
    )
  )

  it.live(
    "drives the seed example through the typed client and reports the seed's coverage",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const server = yield* withServer()
          expect(server.url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/rpc$/)
          const client = yield* makeSkeinClient({ url: server.url })
          const thread = yield* client.thread.create({ title: "seed over rpc" })
          const runs = yield* driveSeed(thread.id, client.run.start)
          expect(runs.map((r) => r.status)).toEqual(Array(9).fill("completed"))
          const view = yield* client.thread.get({ threadId: thread.id })
          expect(coverageSummary(view)).toEqual(seedExpectedCoverage)
          expect(coverageLines(view)).toEqual([
            "C1 (codex)  native 1,2,3,4,5,9  handoffs H2(6-8)",
            "L1 (claude) native 6,7,8  handoffs H1(1-5)"
          ])
          // The inspector's lanes read it the seeds' way.
          expect(laneCoverage(view).map((lane) => lane.text)).toEqual(["C1 1-5,9 + H2", "L1 6-8 + H1"])
          // A window of the runs, typed both ways: runs 4-6 with what belongs to them.
          const page = yield* client.thread.get({ threadId: thread.id, runs: { after: 3, limit: 3 }, items: false })
          expect(page.page).toMatchObject({ runCount: 9, from: 4, to: 6, items: false })
          expect(page.page?.sequence).toBeGreaterThan(0)
          expect(page.runs.map((r) => r.ordinal)).toEqual([4, 5, 6])
          expect(page.runs.every((r) => r.items.length === 0)).toBe(true)
          expect(page.handoffs.map((h) => h.coveredRunOrdinals)).toEqual([{ from: 1, to: 5 }]) // delivered with run 6
          const newest = yield* client.thread.get({ threadId: thread.id, runs: { limit: 2 } })
          expect(newest.runs.map((r) => r.ordinal)).toEqual([8, 9])
          expect(newest.runs.map((r) => r.items.length > 0)).toEqual([true, true])
          expect(view.page).toBeUndefined()
          // a typed domain error arrives as itself, with its derived message
          const missing = yield* Effect.flip(client.thread.get({ threadId: ThreadId.make("thr_missing") }))
          expect(missing._tag).toBe("ThreadNotFound")
          expect(missing.message).toContain("thr_missing")
        })
      ),
    120_000
  )

  it.live(
    "with a token: a wrong or missing token is refused at the handshake (401), the right one works",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const token = "T0k3n-for-the-rpc-test-0123456789abcdef"
          const server = yield* withServer({ token })
          const wrong = yield* makeSkeinClient({ url: server.url, token: "not-it" })
          const refused = yield* Effect.flip(wrong.thread.list({}))
          expect(refused._tag).toBe("RpcClientError")
          expect(refused.cause).toBeInstanceOf(HandshakeRefused)
          expect((refused.cause as HandshakeRefused).status).toBe(401)
          expect(refused.message).toContain("HTTP 401")
          expect(refused.message).toContain("the token given is not it")
          expect(refused.message).not.toContain("not-it")
          const none = yield* makeSkeinClient({ url: server.url, dataDir: tempDir("skein-no-token-") })
          expect((yield* Effect.flip(none.thread.create({}))).message).toMatch(/HTTP 401.*no token/)
          const right = yield* makeSkeinClient({ url: server.url, token })
          const thread = yield* right.thread.create({ title: "authorized" })
          expect(thread.title).toBe("authorized")
          // the Authorization header works as well as the query parameter
          const [viaHeader] = yield* Effect.promise(() =>
            rawExchange(server.url, [requestFrame("1", "thread.list", {})], 1, {
              headers: { authorization: `Bearer ${token}` }
            })
          )
          expect(viaHeader.exit._tag).toBe("Success")
          // a refused upgrade is an HTTP answer, never a socket
          const badHeader = yield* Effect.promise(() => tryUpgrade(server.url, { authorization: "Bearer nope" }))
          expect(badHeader).toMatchObject({ status: 401 })
          expect(yield* Effect.promise(() => tryUpgrade(server.url))).toMatchObject({ status: 401 })
          expect(yield* Effect.promise(() => tryUpgrade(`${server.url}?token=${token}`))).toBe("open")
        })
      ),
    60_000
  )

  it.live(
    "a page's Origin must be allowed, token or not (403); programs send none",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const token = "T0k3n-for-the-origin-test-0123456789abc"
          const server = yield* withServer({ token, allowedOrigins: ["http://localhost:5173"] })
          const authorized = `${server.url}?token=${token}`
          for (const origin of ["http://evil.example", "null", "http://localhost:5174", "https://localhost:5173"]) {
            const refused = yield* Effect.promise(() => tryUpgrade(authorized, { origin }))
            expect(refused).toMatchObject({ status: 403 })
            expect((refused as { body: string }).body).toContain("--allow-origin")
          }
          expect(yield* Effect.promise(() => tryUpgrade(authorized, { origin: "http://localhost:5173" }))).toBe("open")
          expect(
            yield* Effect.promise(() => tryUpgrade(server.url, { origin: "http://localhost:5173" }))
          ).toMatchObject({
            status: 401
          })
          // without any allowed origin (the default), every page of another origin is refused
          const closed = yield* withServer({ token })
          const page = yield* Effect.promise(() =>
            tryUpgrade(`${closed.url}?token=${token}`, { origin: "http://127.0.0.1:8080" })
          )
          expect(page).toMatchObject({ status: 403 })
          // but the daemon's own origin on its loopback address is: only a page it served has it
          const own = `http://${new URL(closed.url).host}`
          expect(yield* Effect.promise(() => tryUpgrade(`${closed.url}?token=${token}`, { origin: own }))).toBe("open")
          // a weak token or a bad origin is refused before listening
          expect((yield* Effect.flip(withServer({ token: "  " })))._tag).toBe("WeakToken")
          expect((yield* Effect.flip(withServer({ allowedOrigins: ["*"] })))._tag).toBe("InvalidOrigin")
        })
      ),
    60_000
  )

  it.live(
    "malformed JSON, an unknown method and a 10 MB frame each get an error; serving goes on",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const server = yield* withServer()
          const other = yield* makeSkeinClient({ url: server.url })
          const tenMb = requestFrame("3", "thread.create", { title: "x".repeat(10 * 1024 * 1024) })
          const replies = yield* Effect.promise(() =>
            rawExchange(
              server.url,
              [
                "{this is not json",
                requestFrame("2", "thread.explode", {}),
                tenMb,
                requestFrame("4", "run.start", { threadId: "thr_x", provider: "codex", message: "" }),
                requestFrame("5", "thread.create", { title: "still served" })
              ],
              5,
              { timeoutMs: 15_000 }
            )
          )
          expect(replies).toHaveLength(5)
          expect(replies[0]._tag).toBe("Defect")
          expect(String(replies[0].defect)).toContain("not valid JSON")
          const byId = new Map(replies.slice(1).map((r) => [r.requestId, r]))
          expect(byId.get("2").exit.cause.error).toMatchObject({ _tag: "InvalidInput" })
          expect(byId.get("2").exit.cause.error.detail).toContain("thread.explode")
          expect(byId.get("3").exit.cause.error._tag).toBe("InvalidInput")
          expect(byId.get("3").exit.cause.error.detail).toContain("limit")
          expect(byId.get("4").exit.cause.error._tag).toBe("InvalidInput")
          expect(byId.get("5").exit).toMatchObject({ _tag: "Success", value: { title: "still served" } })
          // other connections were never disturbed
          const list = yield* other.thread.list({})
          expect(list.map((t) => t.title)).toContain("still served")
        })
      ),
    60_000
  )

  it.live(
    "thread.events for a thread that does not exist is answered with ThreadNotFound",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const server = yield* withServer()
          const replies = yield* Effect.promise(() =>
            rawExchange(
              server.url,
              [requestFrame("1", "thread.events", { threadId: "thr_nowhere" }), requestFrame("2", "thread.list", {})],
              2
            )
          )
          const byId = new Map(replies.map((r) => [r.requestId, r]))
          expect(byId.get("1")?.exit.cause.error).toMatchObject({ _tag: "ThreadNotFound", threadId: "thr_nowhere" })
          expect(byId.get("2")?.exit._tag).toBe("Success")
        })
      ),
    30_000
  )

  it.live(
    "50 clients follow one thread while runs happen; each receives every event in order",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const server = yield* withServer()
          const driver = yield* makeSkeinClient({ url: server.url })
          const thread = yield* driver.thread.create({ title: "fan-out" })
          const runs = 3
          const isLastRunEnd = (e: StoredEvent) => e.event._tag === "RunEnded" && e.event.run.ordinal === runs
          const followers = yield* Effect.forEach(
            Array.from({ length: 50 }, (_, i) => i),
            () =>
              Effect.gen(function* () {
                const client = yield* makeSkeinClient({ url: server.url })
                return yield* client.thread
                  .events({ threadId: thread.id })
                  .pipe(
                    Stream.takeUntil(isLastRunEnd),
                    Stream.runCollect,
                    Effect.map(Chunk.toReadonlyArray),
                    Effect.timeout("60 seconds"),
                    Effect.forkScoped
                  )
              }),
            { concurrency: 10 }
          )
          for (let i = 1; i <= runs; i++) {
            const run = yield* driver.run.start({
              threadId: thread.id,
              provider: ProviderName.make(i % 2 === 0 ? "claude" : "codex"),
              message: `run ${i} [[cmd:echo ${i}:0]]`,
              wait: true
            })
            expect(run.status).toBe("completed")
          }
          const all = yield* driver.thread
            .events({ threadId: thread.id })
            .pipe(Stream.takeUntil(isLastRunEnd), Stream.runCollect, Effect.map(Chunk.toReadonlyArray))
          const expected = all.map((e) => e.threadSequence)
          expect(expected).toEqual(Array.from({ length: expected.length }, (_, i) => i + 1))
          const received = yield* Effect.forEach(followers, (f) => f.await.pipe(Effect.flatten))
          expect(received).toHaveLength(50)
          for (const events of received) expect(events.map((e) => e.threadSequence)).toEqual(expected)
        })
      ),
    120_000
  )

  it.live(
    "a follower that reconnects with its last sequence gets the rest with no gap or duplicate",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const server = yield* withServer()
          const driver = yield* makeSkeinClient({ url: server.url })
          const thread = yield* driver.thread.create({ title: "reconnect" })
          const start = (i: number) =>
            driver.run.start({
              threadId: thread.id,
              provider: ProviderName.make("codex"),
              message: `run ${i}`,
              wait: true
            })
          yield* start(1)
          // First connection: read what is there, then drop the connection.
          const first = yield* Effect.scoped(
            Effect.gen(function* () {
              const client = yield* makeSkeinClient({ url: server.url })
              return yield* client.thread.events({ threadId: thread.id }).pipe(
                Stream.takeUntil((e) => e.event._tag === "RunEnded"),
                Stream.runCollect,
                Effect.map(Chunk.toReadonlyArray)
              )
            })
          )
          // Runs go on while nobody listens.
          yield* start(2)
          yield* start(3)
          const last = first[first.length - 1]!.threadSequence
          const client = yield* makeSkeinClient({ url: server.url })
          const rest = yield* client.thread.events({ threadId: thread.id, fromSequence: last }).pipe(
            Stream.takeUntil((e) => e.event._tag === "RunEnded" && e.event.run.ordinal === 3),
            Stream.runCollect,
            Effect.map(Chunk.toReadonlyArray),
            Effect.timeout("30 seconds")
          )
          const sequences = [...first, ...rest].map((e) => e.threadSequence)
          expect(rest[0]!.threadSequence).toBe(last + 1)
          expect(sequences).toEqual(Array.from({ length: sequences.length }, (_, i) => i + 1))
        })
      ),
    60_000
  )
})
