/**
 * JsonRpcPeer: correlation, notifications, requests of the other side, fail-all. The
 * unit tests hand messages to `receive` and record what `send` writes; the last one
 * serves a real `node` child that exits while a request waits.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import { ProviderFailure } from "@skein/domain"
import * as JsonRpcPeer from "../src/agents/JsonRpcPeer.js"
import { LineProcess, scopedEnv } from "../src/process/LineProcess.js"

const harness = (intercept?: (method: string, params: unknown) => boolean) => {
  const sent: Array<unknown> = []
  const notifications: Array<[string, unknown]> = []
  const requests: Array<[number | string, string, unknown]> = []
  const warnings: Array<string> = []
  const peer = JsonRpcPeer.make({
    provider: "p",
    send: (message) => Effect.sync(() => void sent.push(message)),
    onNotification: (method, params) => void notifications.push([method, params]),
    onRequest: (id, method, params) => void requests.push([id, method, params]),
    intercept,
    warn: (message) => void warnings.push(message)
  })
  return { peer, sent, notifications, requests, warnings }
}

const crash = (what: string) => new ProviderFailure({ provider: "p", kind: "crash", detail: `gone (during ${what})` })

describe("JsonRpcPeer", () => {
  it.effect("correlates replies with requests by id, whatever their order", () =>
    Effect.gen(function* () {
      const { peer, sent } = harness()
      const first = yield* Effect.fork(peer.call("a", { n: 1 }))
      const second = yield* Effect.fork(peer.call("b", { n: 2 }))
      yield* Effect.yieldNow()
      expect(sent).toEqual([
        { id: 1, method: "a", params: { n: 1 } },
        { id: 2, method: "b", params: { n: 2 } }
      ])
      peer.receive({ id: 2, result: "two" })
      peer.receive({ id: 1, error: { code: -1, message: "no" } })
      expect(yield* Fiber.join(second)).toBe("two")
      const failed = yield* Effect.flip(Fiber.join(first))
      expect({ kind: failed.kind, detail: failed.detail }).toEqual({ kind: "error", detail: "a: no" })
      expect(peer.pendingCount()).toBe(0)
    })
  )

  it.effect("runs onResult in the reader, before the message after the reply", () =>
    Effect.gen(function* () {
      const order: Array<string> = []
      const peer = JsonRpcPeer.make({
        provider: "p",
        send: () => Effect.void,
        onNotification: (method) => void order.push(`notification ${method}`),
        onRequest: () => {},
        warn: () => {}
      })
      const call = yield* Effect.fork(peer.call("start", {}, (result) => void order.push(`result ${String(result)}`)))
      yield* Effect.yieldNow()
      peer.receive({ id: 1, result: "r" })
      peer.receive({ method: "after" })
      expect(order).toEqual(["result r", "notification after"])
      expect(yield* Fiber.join(call)).toBe("r")
    })
  )

  it.effect("hands over notifications and requests, and writes answers and notifications", () =>
    Effect.gen(function* () {
      const { peer, sent, notifications, requests } = harness((method) => method === "held")
      peer.receive({ method: "note", params: { x: 1 } })
      peer.receive({ method: "bare" })
      peer.receive({ method: "held", params: 1 })
      peer.receive({ id: "s1", method: "ask", params: { q: 1 } })
      expect(notifications).toEqual([
        ["note", { x: 1 }],
        ["bare", undefined]
      ])
      expect(requests).toEqual([["s1", "ask", { q: 1 }]])
      yield* peer.respond("s1", { result: { decision: "accept" } })
      yield* peer.respond(7, { error: { code: -32601, message: "unhandled" } })
      yield* peer.notify("initialized")
      yield* peer.notify("ping", { at: 1 })
      expect(sent).toEqual([
        { id: "s1", result: { decision: "accept" } },
        { id: 7, error: { code: -32601, message: "unhandled" } },
        { method: "initialized" },
        { method: "ping", params: { at: 1 } }
      ])
    })
  )

  it.effect("drops a reply to an unknown id and skips hostile lines with a warning", () =>
    Effect.gen(function* () {
      const { peer, notifications, requests, warnings } = harness()
      const call = yield* Effect.fork(peer.call("a", null))
      yield* Effect.yieldNow()
      peer.receive({ id: 99, result: "stray" })
      peer.receive({ id: "1", result: "string id" })
      peer.receive([1, 2])
      peer.receive("text")
      peer.receive(null)
      peer.receive({ method: 5 })
      peer.receive({ id: {}, method: "x", params: 1 })
      peer.receive({ id: 1, error: "not an object" })
      peer.receive({ result: "no id" })
      expect(warnings).toEqual([
        "p: skipping a message that is not an object",
        "p: skipping a message that is not an object",
        "p: skipping a message that is not an object",
        "p: skipping a malformed notification",
        "p: skipping a malformed server request",
        "p: skipping a malformed error reply",
        "p: skipping a malformed reply"
      ])
      expect(notifications).toEqual([])
      expect(requests).toEqual([])
      expect(peer.pendingCount()).toBe(1)
      peer.receive({ id: 1, result: "mine" })
      expect(yield* Fiber.join(call)).toBe("mine")
    })
  )

  it.effect("fails every pending request and every later call once failed-all", () =>
    Effect.gen(function* () {
      const { peer, sent } = harness()
      const waiting = yield* Effect.fork(peer.call("a", null))
      yield* Effect.yieldNow()
      peer.failAll(crash)
      peer.failAll(() => new ProviderFailure({ provider: "p", kind: "error", detail: "second reason" }))
      const first = yield* Effect.flip(Fiber.join(waiting))
      const later = yield* Effect.flip(peer.call("b", null))
      expect([first.detail, later.detail]).toEqual(["gone (during a)", "gone (during b)"])
      expect(sent).toEqual([{ id: 1, method: "a", params: null }])
      expect(peer.pendingCount()).toBe(0)
    })
  )

  it.scoped(
    "serves a real process and fails its pending request when the process exits",
    () =>
      Effect.gen(function* () {
        // Answers the first request, then exits with code 3 on the second.
        const script = `
          const rl = require("node:readline").createInterface({ input: process.stdin })
          let n = 0
          rl.on("line", (line) => {
            const { id } = JSON.parse(line)
            if (++n === 1) process.stdout.write(JSON.stringify({ id, result: "ok" }) + "\\n")
            else process.exit(3)
          })`
        const proc = yield* LineProcess.spawn({
          command: process.execPath,
          args: ["-e", script],
          env: scopedEnv(),
          provider: "p"
        })
        const peer = JsonRpcPeer.make({
          provider: "p",
          send: proc.send,
          onNotification: () => {},
          onRequest: () => {},
          warn: () => {}
        })
        yield* JsonRpcPeer.serve(peer, proc, (how) =>
          Effect.sync(() =>
            peer.failAll(
              (what) => new ProviderFailure({ provider: "p", kind: "crash", detail: `process ${how} (during ${what})` })
            )
          )
        )
        expect(yield* peer.call("first", null)).toBe("ok")
        const exit = yield* Effect.exit(peer.call("second", null).pipe(Effect.timeout(10_000)))
        expect(Exit.isFailure(exit)).toBe(true)
        const error = yield* Effect.flip(exit)
        expect(error).toMatchObject({ kind: "crash", detail: "process exited with code 3 (during second)" })
      }),
    20_000
  )
})
