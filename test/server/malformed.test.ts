/**
 * The malformed messages that used to kill `skein stdio` or drop a WebSocket with no
 * answer, and a duplicate in-flight request id: each gets a typed answer, the process
 * and the connection live on, and the requests around them are served.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawnLineChild } from "./lineChild.js"
import { openRawSession } from "./rawSession.js"
import { binPath, childEnv, rawExchange, requestFrame, tempDir, withServer } from "./support.js"

const deep = (depth: number, leaf: string) => "[".repeat(depth) + leaf + "]".repeat(depth)

/** The eight messages of the report, then a valid request: id → what each must get. */
const malformed: ReadonlyArray<{
  readonly frame: string
  readonly expect: "InvalidInput" | "Defect"
  readonly id?: string
}> = [
  {
    frame: JSON.stringify({ _tag: "Request", id: "11", tag: "thread.list", payload: {}, headers: [[1, 2]] }),
    expect: "InvalidInput",
    id: "11"
  },
  {
    frame: JSON.stringify({ _tag: "Request", id: "12", tag: "thread.list", payload: {}, headers: [null] }),
    expect: "InvalidInput",
    id: "12"
  },
  { frame: JSON.stringify({ _tag: "Interrupt" }), expect: "Defect" },
  { frame: JSON.stringify({ _tag: "Interrupt", requestId: "not-a-number" }), expect: "Defect" },
  { frame: JSON.stringify({ _tag: "Ack" }), expect: "Defect" },
  { frame: JSON.stringify({ _tag: "Ack", requestId: "x1" }), expect: "Defect" },
  {
    frame: `{"_tag":"Request","id":"17","tag":"thread.create","payload":{"title":${deep(10_000, '"t"')}},"headers":[]}`,
    expect: "InvalidInput",
    id: "17"
  },
  {
    frame: `{"_tag":"Request","id":"18","tag":${deep(100_000, '"x"')},"payload":{},"headers":[]}`,
    expect: "InvalidInput",
    id: "18"
  }
]
const valid = requestFrame("19", "thread.create", { title: "after the garbage" })

const checkAnswers = (replies: ReadonlyArray<any>) => {
  const exits = new Map(replies.filter((r) => r._tag === "Exit").map((r) => [r.requestId, r]))
  for (const m of malformed.filter((m) => m.id !== undefined)) {
    expect(exits.get(m.id!)?.exit.cause.error._tag, m.frame.slice(0, 80)).toBe("InvalidInput")
  }
  expect(replies.filter((r) => r._tag === "Defect")).toHaveLength(malformed.filter((m) => m.expect === "Defect").length)
  expect(exits.get("19")?.exit).toMatchObject({ _tag: "Success", value: { title: "after the garbage" } })
}

describe("malformed messages", () => {
  it.live(
    "over WebSocket: each of the eight gets a typed answer on a connection that stays open",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const server = yield* withServer()
          const frames = [...malformed.map((m) => m.frame), valid]
          const replies = yield* Effect.promise(() => rawExchange(server.url, frames, 9, { timeoutMs: 15_000 }))
          checkAnswers(replies)
        })
      ),
    60_000
  )

  it("over stdio: each of the eight gets a typed answer and the process lives", async () => {
    const home = tempDir("skein-malformed-")
    const child = spawnLineChild(process.execPath, [binPath, "stdio"], childEnv(home))
    try {
      for (const m of malformed) child.write(m.frame)
      child.write(valid)
      await child.until(() => child.replies.length >= 9, 20_000, "nine answers")
      checkAnswers(child.replies)
      expect(child.alive()).toBe(true)
    } finally {
      await child.kill()
    }
  }, 40_000)

  it.live(
    "a second request with an id still in flight gets InvalidInput; the first is answered as usual",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const server = yield* withServer()
          const [created] = yield* Effect.promise(() =>
            rawExchange(server.url, [requestFrame("1", "thread.create", { title: "dup" })], 1)
          )
          const threadId = created.exit.value.id
          const slow = requestFrame("5", "run.start", {
            threadId,
            provider: "codex",
            message: "slow [[sleep:1500]]",
            wait: true
          })
          const session = yield* Effect.acquireRelease(
            Effect.promise(() => openRawSession(server.url)),
            (s) => Effect.sync(s.close)
          )
          const forFive = () => session.replies.filter((r) => r.requestId === "5")
          yield* Effect.promise(async () => {
            await session.send(slow)
            await session.send(requestFrame("5", "thread.list", {}))
            await session.send(requestFrame("6", "thread.list", {}))
            await session.until(() => forFive().length === 2, 20_000, "both answers for id 5")
            // once answered, the id is free again on the same connection
            await session.send(requestFrame("5", "thread.list", {}))
            await session.until(() => forFive().length === 3, 10_000, "the reused id's answer")
          })
          const [duplicate, first, reused] = forFive()
          expect(duplicate.exit.cause.error).toMatchObject({ _tag: "InvalidInput" })
          expect(duplicate.exit.cause.error.detail).toContain("request id 5 is already in flight")
          expect(first.exit).toMatchObject({ _tag: "Success", value: { status: "completed" } })
          expect(reused.exit._tag).toBe("Success")
          expect(session.replies.find((r) => r.requestId === "6").exit._tag).toBe("Success")
        })
      ),
    60_000
  )
})
