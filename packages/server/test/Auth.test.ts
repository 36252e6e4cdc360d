import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import { checkBind, checkToken, isLoopbackHost, presentedToken, tokenMatches, tokenWeakness } from "../src/Auth.js"
import { resolveClientToken } from "../src/Client.js"
import { dataDirProblem } from "../src/DataDir.js"
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

  it("with a Host check, admits only requests addressed to a loopback name or an allowed one (421)", () => {
    const checking = (allowedHosts: Array<string>) => Effect.runSync(makeAccessPolicy({ token: strong, allowedHosts }))
    const verdict = (host: string | undefined, policy = checking([])) =>
      admitUpgrade({ headers: host === undefined ? {} : { host }, url: `/rpc?token=${strong}` }, policy)
    for (const host of [
      "127.0.0.1:7878",
      "127.0.0.1",
      "127.1.2.3:9",
      "localhost:7878",
      "LOCALHOST",
      "[::1]:7878",
      "[::1]"
    ]) {
      expect(verdict(host)._tag, host).toBe("Admit")
    }
    for (const host of [
      "attacker.example",
      "attacker.example:7878",
      "localhost.attacker.example",
      "127.0.0.1.nip.io",
      "0.0.0.0:7878",
      "[::2]:7878",
      "",
      "a b",
      undefined
    ]) {
      expect(verdict(host), String(host)).toEqual({
        _tag: "Refuse",
        status: 421,
        host: host ?? "(none)",
        reason: `Skein here answers only requests addressed to a loopback name (127.0.0.1, localhost, [::1]), not to Host ${JSON.stringify(host ?? "(none)")}. Start the daemon with --allow-host NAME to allow another name.`
      })
    }
    const allowed = checking(["Skein.Internal", "[fd00::1]"])
    expect(verdict("skein.internal:7878", allowed)._tag).toBe("Admit")
    expect(verdict("[fd00::1]:7878", allowed)._tag).toBe("Admit")
    expect(verdict("other.internal", allowed)).toMatchObject({ status: 421 })
    // the Host check comes first, token or not
    expect(admitUpgrade({ headers: { host: "attacker.example" }, url: "/rpc" }, checking([]))).toMatchObject({
      status: 421
    })
    // without a Host check (the default of makeAccessPolicy), any Host
    expect(verdict("attacker.example", policy())._tag).toBe("Admit")
    for (const bad of ["skein.internal:7878", "http://skein.internal", "a/b", "*", ""]) {
      const exit = Effect.runSyncExit(makeAccessPolicy({ allowedHosts: [bad] }))
      expect(Exit.isFailure(exit) ? Cause.squash(exit.cause) : exit, bad).toMatchObject({
        _tag: "InvalidAllowedHost",
        host: bad
      })
    }
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
    expect(Effect.runSync(readTokenFile(home))).toEqual({ token: first.token, path: first.path })
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
    const resolve = (options: Parameters<typeof resolveClientToken>[0], env: Record<string, string>) =>
      Effect.runSync(resolveClientToken(options, env))
    expect(resolve({ url, dataDir: home }, {})).toEqual({ token, source: `the token in ${tokenFilePath(home)}` })
    expect(resolve({ url }, { SKEIN_HOME: home })).toMatchObject({ token })
    expect(resolve({ url, token: "given" }, { SKEIN_HOME: home }).token).toBe("given")
    expect(resolve({ url }, { SKEIN_HOME: home, SKEIN_TOKEN: "from-env" }).token).toBe("from-env")
    expect(resolve({ url }, { SKEIN_HOME: home, SKEIN_TOKEN: "  " }).token).toBe(token)
    // never sent to a daemon elsewhere
    expect(resolve({ url: "ws://10.1.2.3:7878/rpc" }, { SKEIN_HOME: home }).token).toBeUndefined()
    const none = resolve({ url, dataDir: Path.join(home, "missing") }, {})
    expect(none.token).toBeUndefined()
    expect(none.source).toContain("does not exist")
  })

  it("is refused by a client exactly as by the daemon: a symbolic link, a file others may read", async () => {
    const home = dir()
    const { token } = await Effect.runPromise(loadOrCreateToken(home))
    const url = "ws://127.0.0.1:7878/rpc"
    const refusal = (dataDir: string) => {
      const exit = Effect.runSyncExit(resolveClientToken({ url, dataDir }, {}))
      const daemon = Effect.runSyncExit(loadOrCreateToken(dataDir))
      expect(Exit.isFailure(exit) && Exit.isFailure(daemon)).toBe(true)
      const error = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
      // the same error from both sides
      expect(error).toEqual(Exit.isFailure(daemon) ? Cause.squash(daemon.cause) : undefined)
      return error as { readonly _tag: string; readonly message: string }
    }
    // a token file that is a symbolic link to another file holding a strong token
    const linked = dir()
    const target = Path.join(dir(), "elsewhere")
    Fs.writeFileSync(target, `${token}\n`, { mode: 0o600 })
    Fs.symlinkSync(target, tokenFilePath(linked))
    const link = refusal(linked)
    expect(link._tag).toBe("TokenFileError")
    expect(link.message).toBe(
      `Cannot use the token file ${tokenFilePath(linked)}: it is a symbolic link (to ${target}), and Skein reads only a regular file of its own; delete the link (the daemon makes a new token file on its next start) or pass the token with --token or SKEIN_TOKEN.`
    )
    Fs.chmodSync(tokenFilePath(home), 0o640)
    expect(refusal(home).message).toBe(
      `Cannot use the token file ${tokenFilePath(home)}: other users may read it (mode 640); run chmod 600 on it, or delete it to get a new token.`
    )
  })
})

describe("data directory", () => {
  const dir = () => Fs.mkdtempSync(Path.join(Os.tmpdir(), "skein-home-"))
  const uid = 1000

  it("is refused when others may write to it or it is not the user's (pure)", () => {
    const facts = (mode: number, owner = uid) => ({ isDirectory: true, mode: 0o40000 | mode, uid: owner })
    expect(dataDirProblem("/h", facts(0o700), uid)).toBeUndefined()
    expect(dataDirProblem("/h", facts(0o755), uid)).toBeUndefined()
    expect(dataDirProblem("/h", facts(0o777), uid)).toBe(
      "every user may write to it (mode 777) and so could replace the token or the database; run chmod 700 /h"
    )
    expect(dataDirProblem("/h", facts(0o1777), uid)).toContain("every user may write to it (mode 1777)")
    expect(dataDirProblem("/h", facts(0o770), uid)).toBe(
      "its group may write to it (mode 770) and so could replace the token or the database; run chmod 700 /h"
    )
    expect(dataDirProblem("/h", facts(0o700, 0), uid)).toBe(
      "it belongs to uid 0, not to this user (uid 1000), who could replace the token or the database in it; use a directory of your own (set SKEIN_HOME or pass --data-dir)"
    )
    expect(dataDirProblem("/h", { isDirectory: false, mode: 0o600, uid }, uid)).toBe("it is not a directory")
  })

  it("a daemon and a client refuse a world-writable one, and nothing is created in it", async () => {
    const home = dir()
    Fs.chmodSync(home, 0o777)
    const daemon = Effect.runSyncExit(loadOrCreateToken(home))
    expect(Exit.isFailure(daemon)).toBe(true)
    if (Exit.isFailure(daemon)) {
      expect(Cause.squash(daemon.cause)).toMatchObject({
        _tag: "UnsafeDataDir",
        message: `Refusing the data directory ${home} ($SKEIN_HOME, --data-dir, or ~/.skein): every user may write to it (mode 777) and so could replace the token or the database; run chmod 700 ${home}.`
      })
    }
    expect(Fs.readdirSync(home)).toEqual([])
    // a token file made while the directory was safe is not read once it is not
    Fs.chmodSync(home, 0o700)
    await Effect.runPromise(loadOrCreateToken(home))
    Fs.chmodSync(home, 0o775)
    const client = Effect.runSyncExit(resolveClientToken({ url: "ws://127.0.0.1:1/rpc", dataDir: home }, {}))
    expect(Exit.isFailure(client) ? Cause.squash(client.cause) : client).toMatchObject({ _tag: "UnsafeDataDir" })
  })
})
