import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { checkBind, isAuthorized, isLoopbackHost, presentedToken, tokenMatches } from "../src/Auth.js"

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
