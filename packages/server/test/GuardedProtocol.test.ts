import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { checkBind, isAuthorized, isLoopbackHost, presentedToken, tokenMatches } from "../src/Auth.js"
import { screenMessage } from "../src/GuardedProtocol.js"

const request = (tag: unknown, payload: unknown, id: unknown = "1") => ({
  _tag: "Request",
  id,
  tag,
  payload,
  headers: []
})

const failureOf = (screened: ReturnType<typeof screenMessage>) => {
  expect(screened._tag).toBe("Reply")
  const reply = (
    screened as { reply: { _tag: string; exit?: { cause: { error: { _tag: string; detail?: string } } } } }
  ).reply
  expect(reply._tag).toBe("Exit")
  return reply.exit!.cause.error
}

describe("screenMessage", () => {
  it("forwards a well-formed request", () => {
    const screened = screenMessage(request("thread.create", { title: "t" }), true)
    expect(screened._tag).toBe("Forward")
  })

  it("answers an unknown method with InvalidInput naming the known ones", () => {
    const error = failureOf(screenMessage(request("thread.nope", {}), true))
    expect(error._tag).toBe("InvalidInput")
    expect(error.detail).toContain("thread.nope")
    expect(error.detail).toContain("run.start")
  })

  it("answers an undecodable payload with InvalidInput", () => {
    const error = failureOf(
      screenMessage(request("run.start", { threadId: "thr_1", provider: "bad name!", message: "" }), true)
    )
    expect(error._tag).toBe("InvalidInput")
    expect(error.detail).toContain("run.start")
  })

  it("answers every request of an unauthorized connection with Unauthorized", () => {
    expect(failureOf(screenMessage(request("thread.list", {}), false))._tag).toBe("Unauthorized")
    // non-request messages (pings, acks) carry no data and pass
    expect(screenMessage({ _tag: "Ping" }, false)._tag).toBe("Forward")
  })

  it("answers a message that is not an RPC message with a protocol defect", () => {
    for (const message of [42, null, [1, 2], { _tag: "Bogus" }, request("thread.list", {}, 7)]) {
      const screened = screenMessage(message, true)
      expect(screened._tag).toBe("Reply")
      expect((screened as { reply: { _tag: string } }).reply._tag).toBe("Defect")
    }
  })
})

describe("auth", () => {
  it("compares tokens", () => {
    expect(tokenMatches("secret", "secret")).toBe(true)
    expect(tokenMatches("secret", "secreT")).toBe(false)
    expect(tokenMatches("secret", "a-much-longer-token-than-the-secret")).toBe(false)
    expect(tokenMatches("secret", undefined)).toBe(false)
  })

  it("reads the token from the Authorization header or the query", () => {
    expect(presentedToken({ authorization: "Bearer abc" }, "/rpc")).toBe("abc")
    expect(presentedToken({}, "/rpc?token=xyz")).toBe("xyz")
    expect(presentedToken({}, "/rpc")).toBeUndefined()
    expect(isAuthorized(undefined, {}, "/rpc")).toBe(true)
    expect(isAuthorized("t", {}, "/rpc?token=t")).toBe(true)
    expect(isAuthorized("t", { authorization: "Bearer u" }, "/rpc?token=t")).toBe(false)
  })

  it("refuses a non-loopback bind without a token", () => {
    expect(isLoopbackHost("127.0.0.1")).toBe(true)
    expect(isLoopbackHost("::1")).toBe(true)
    expect(isLoopbackHost("localhost")).toBe(true)
    expect(isLoopbackHost("0.0.0.0")).toBe(false)
    expect(isLoopbackHost("192.168.1.4")).toBe(false)
    const refused = Effect.runSyncExit(checkBind("0.0.0.0", undefined))
    expect(Exit.isFailure(refused)).toBe(true)
    if (Exit.isFailure(refused)) expect(String(refused.cause)).toContain("--token")
    expect(Exit.isSuccess(Effect.runSyncExit(checkBind("0.0.0.0", "t")))).toBe(true)
    expect(Exit.isSuccess(Effect.runSyncExit(checkBind("127.0.0.1", undefined)))).toBe(true)
  })
})
