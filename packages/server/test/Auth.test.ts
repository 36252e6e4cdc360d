import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { checkBind, checkToken, isLoopbackHost, presentedToken, tokenMatches, tokenWeakness } from "../src/Auth.js"
import { resolveClientToken } from "../src/Client.js"
import { admitUpgrade, makeAccessPolicy } from "../src/Handshake.js"
import { loadOrCreateToken, readTokenFile, tokenFilePath } from "../src/TokenFile.js"

const strong = "k3Jq9-vXw2ZrT8mYp4LsN6bD0cHfGa1E"

describe("tokens", () => {
  it("compares tokens", () => {
    expect(tokenMatches(strong, strong)).toBe(true)
    expect(tokenMatches(strong, strong.toUpperCase())).toBe(false)
    expect(tokenMatches(strong, `${strong}-and-more`)).toBe(false)
    expect(tokenMatches(strong, undefined)).toBe(false)
  })

  it("reads the token from the Authorization header or the query", () => {
    expect(presentedToken({ authorization: "Bearer abc" }, "/rpc")).toBe("abc")
    expect(presentedToken({}, "/rpc?token=xyz")).toBe("xyz")
    expect(presentedToken({}, "/rpc")).toBeUndefined()
    expect(presentedToken({ authorization: "Basic abc" }, "/rpc?token=xyz")).toBeUndefined()
  })

  it("refuses weak tokens: blank, short, with spaces, or a short pattern", () => {
    for (const weak of [
      "",
      "   ",
      " \t\n ".repeat(10),
      "tok-123",
      "s3cret-token",
      `${strong} `,
      "a".repeat(64),
      "ab".repeat(20),
      `${strong}é`
    ]) {
      expect(tokenWeakness(weak)).toBeDefined()
      const refused = Effect.runSyncExit(checkToken(weak, "--token"))
      expect(Exit.isFailure(refused)).toBe(true)
      if (Exit.isFailure(refused)) expect(String(refused.cause)).toContain("--token")
    }
    expect(tokenWeakness(strong)).toBeUndefined()
    expect(tokenWeakness("0123456789abcdef0123456789abcdef")).toBeUndefined()
  })

  it("refuses a non-loopback bind without a token given on purpose", () => {
    expect(isLoopbackHost("127.0.0.1")).toBe(true)
    expect(isLoopbackHost("::1")).toBe(true)
    expect(isLoopbackHost("localhost")).toBe(true)
    expect(isLoopbackHost("0.0.0.0")).toBe(false)
    expect(isLoopbackHost("192.168.1.4")).toBe(false)
    const refused = Effect.runSyncExit(checkBind("0.0.0.0", undefined))
    expect(Exit.isFailure(refused)).toBe(true)
    if (Exit.isFailure(refused)) expect(String(refused.cause)).toContain("--token")
    expect(Exit.isFailure(Effect.runSyncExit(checkBind("0.0.0.0", "   ")))).toBe(true)
    expect(Exit.isSuccess(Effect.runSyncExit(checkBind("0.0.0.0", strong)))).toBe(true)
    expect(Exit.isSuccess(Effect.runSyncExit(checkBind("127.0.0.1", undefined)))).toBe(true)
  })
})

describe("handshake", () => {
  const policy = (allowedOrigins: Array<string> = [], token: string | undefined = strong) =>
    Effect.runSync(makeAccessPolicy({ token, allowedOrigins }))

  it("admits a program (no Origin) with the token, refuses it without (401)", () => {
    expect(admitUpgrade({ headers: {}, url: `/rpc?token=${strong}` }, policy())._tag).toBe("Admit")
    expect(admitUpgrade({ headers: { authorization: `Bearer ${strong}` }, url: "/rpc" }, policy())._tag).toBe("Admit")
    for (const url of ["/rpc", "/rpc?token=", "/rpc?token=wrong"]) {
      expect(admitUpgrade({ headers: {}, url }, policy())).toMatchObject({ _tag: "Refuse", status: 401 })
    }
  })

  it("refuses a page of any origin not allowed (403), even with the right token", () => {
    for (const origin of ["http://evil.example", "null", "http://127.0.0.1:9", "file://", "not a url"]) {
      const verdict = admitUpgrade({ headers: { origin }, url: `/rpc?token=${strong}` }, policy())
      expect(verdict).toMatchObject({ _tag: "Refuse", status: 403 })
    }
    const allowed = policy(["http://LOCALHOST:5173/"])
    expect(
      admitUpgrade({ headers: { origin: "http://localhost:5173" }, url: `/rpc?token=${strong}` }, allowed)._tag
    ).toBe("Admit")
    expect(admitUpgrade({ headers: { origin: "http://localhost:5173" }, url: "/rpc" }, allowed)).toMatchObject({
      status: 401
    })
    expect(
      admitUpgrade({ headers: { origin: "https://localhost:5173" }, url: `/rpc?token=${strong}` }, allowed)
    ).toMatchObject({ status: 403 })
  })

  it("refuses allow-list entries that are not origins", () => {
    for (const origin of ["*", "localhost:5173", "http://localhost:5173/app", "ftp://x", "http://u:p@x"]) {
      const exit = Effect.runSyncExit(makeAccessPolicy({ allowedOrigins: [origin] }))
      expect(Exit.isFailure(exit)).toBe(true)
      if (Exit.isFailure(exit)) expect(String(exit.cause)).toContain("--allow-origin")
    }
  })
})

describe("token file", () => {
  const dir = () => Fs.mkdtempSync(Path.join(Os.tmpdir(), "skein-token-"))

  it("is created once, mode 0600 in a 0700 directory, and read back the same", async () => {
    const home = Path.join(dir(), "home")
    const first = await Effect.runPromise(loadOrCreateToken(home))
    expect(tokenWeakness(first.token)).toBeUndefined()
    expect(first.path).toBe(tokenFilePath(home))
    expect(Fs.statSync(first.path).mode & 0o777).toBe(0o600)
    expect(Fs.statSync(home).mode & 0o777).toBe(0o700)
    const again = await Effect.runPromise(loadOrCreateToken(home))
    expect(again.token).toBe(first.token)
    expect(readTokenFile(home)).toEqual({ token: first.token, path: first.path })
    // two daemons starting together agree on one token
    const other = Path.join(dir(), "race")
    const tokens = await Promise.all(Array.from({ length: 8 }, () => Effect.runPromise(loadOrCreateToken(other))))
    expect(new Set(tokens.map((t) => t.token)).size).toBe(1)
  })

  it("is refused when others may read it, or when it is weak", async () => {
    const home = dir()
    await Effect.runPromise(loadOrCreateToken(home))
    Fs.chmodSync(tokenFilePath(home), 0o644)
    const open = await Effect.runPromiseExit(loadOrCreateToken(home))
    expect(Exit.isFailure(open)).toBe(true)
    if (Exit.isFailure(open)) expect(String(open.cause)).toContain("chmod 600")
    Fs.writeFileSync(tokenFilePath(home), "short\n", { mode: 0o600 })
    Fs.chmodSync(tokenFilePath(home), 0o600)
    const weak = await Effect.runPromiseExit(loadOrCreateToken(home))
    expect(Exit.isFailure(weak)).toBe(true)
    if (Exit.isFailure(weak)) expect(String(weak.cause)).toContain("WeakToken")
  })

  it("is what a client presents for a loopback url when no token is given, and only then", async () => {
    const home = dir()
    const { token } = await Effect.runPromise(loadOrCreateToken(home))
    const url = "ws://127.0.0.1:7878/rpc"
    expect(resolveClientToken({ url, dataDir: home }, {})).toMatchObject({
      token,
      source: `the token in ${tokenFilePath(home)}`
    })
    expect(resolveClientToken({ url }, { SKEIN_HOME: home })).toMatchObject({ token })
    expect(resolveClientToken({ url, token: "given" }, { SKEIN_HOME: home }).token).toBe("given")
    expect(resolveClientToken({ url }, { SKEIN_HOME: home, SKEIN_TOKEN: "from-env" }).token).toBe("from-env")
    expect(resolveClientToken({ url }, { SKEIN_HOME: home, SKEIN_TOKEN: "  " }).token).toBe(token)
    // never sent to a daemon elsewhere
    expect(resolveClientToken({ url: "ws://10.1.2.3:7878/rpc" }, { SKEIN_HOME: home }).token).toBeUndefined()
    const none = resolveClientToken({ url, dataDir: Path.join(home, "missing") }, {})
    expect(none.token).toBeUndefined()
    expect(none.source).toContain("does not exist")
  })
})
