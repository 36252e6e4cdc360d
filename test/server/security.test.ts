/**
 * The local defences of the `skein` executable as a user meets them: the client reads
 * its token file under the daemon's own checks (and sends nothing when they fail), an
 * unsafe data directory is refused by the daemon and the clients with how to fix it,
 * and a loopback daemon answers only requests addressed to a loopback name.
 */
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterEach, describe, expect, it } from "vitest"
import { childEnv, runSkein, tempDir, tokenIn, trackDaemons } from "./support.js"

const start = trackDaemons()
const strong = "k3Jq9-vXw2ZrT8mYp4LsN6bD0cHfGa1E"

/** A loopback TCP listener that counts the connections made to it (and drops them). */
const countingListener = async () => {
  let connections = 0
  const server = Net.createServer((socket) => {
    connections++
    socket.destroy()
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as Net.AddressInfo
  return {
    url: `ws://127.0.0.1:${port}/rpc`,
    connections: () => connections,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
const listeners: Array<{ close: () => Promise<void> }> = []
afterEach(async () => {
  for (const listener of listeners.splice(0)) await listener.close()
})
const listen = async () => {
  const listener = await countingListener()
  listeners.push(listener)
  return listener
}

/** The JSON error a failed `skein` command printed, and its exit code. */
const failure = (result: { code: number | null; stderr: string }) => ({
  code: result.code,
  error: JSON.parse(result.stderr.trim())
})

/**
 * A WebSocket upgrade request written by hand (so the `Host` header is exactly the
 * one given): the status the server answered and its body.
 */
const rawUpgrade = (url: string, host: string, token: string): Promise<{ status: number; body: string }> =>
  new Promise((resolve, reject) => {
    const { hostname, port, pathname } = new URL(url)
    const socket = Net.createConnection({ host: hostname, port: Number(port) })
    let received = ""
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`no answer to the upgrade for Host ${host} within 5 s: ${JSON.stringify(received)}`))
    }, 5_000)
    const done = (answer: { status: number; body: string }) => {
      clearTimeout(timer)
      socket.destroy()
      resolve(answer)
    }
    socket.on("connect", () =>
      socket.write(
        [
          `GET ${pathname}?token=${encodeURIComponent(token)} HTTP/1.1`,
          `Host: ${host}`,
          "Upgrade: websocket",
          "Connection: Upgrade",
          "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
          "Sec-WebSocket-Version: 13",
          "",
          ""
        ].join("\r\n")
      )
    )
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString("utf8")
      const headEnd = received.indexOf("\r\n\r\n")
      if (headEnd < 0) return
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1])
      if (status === 101) return done({ status, body: "" })
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(received.slice(0, headEnd))?.[1] ?? 0)
      const body = received.slice(headEnd + 4)
      if (Buffer.byteLength(body) >= length) done({ status, body })
    })
    socket.on("error", (error) => {
      clearTimeout(timer)
      reject(error)
    })
  })

describe("the client's token file", () => {
  it("a symbolic link, or a file others may read, is refused by skein call and the human commands; nothing is sent", async () => {
    const home = tempDir("skein-link-")
    const target = Path.join(tempDir("skein-target-"), "secret")
    Fs.writeFileSync(target, `${strong}\n`, { mode: 0o600 })
    Fs.symlinkSync(target, Path.join(home, "token"))
    const listener = await listen()
    const env = childEnv(home, { SKEIN_URL: listener.url })
    const linked = {
      code: 1,
      error: {
        _tag: "TokenFileError",
        message: `Cannot use the token file ${Path.join(home, "token")}: it is a symbolic link (to ${target}), and Skein reads only a regular file of its own; delete the link (the daemon makes a new token file on its next start) or pass the token with --token or SKEIN_TOKEN.`
      }
    }
    expect(failure(await runSkein(["call", "thread.list"], env))).toEqual(linked)
    // The human commands: the typed error with --json, one readable line without.
    expect(failure(await runSkein(["thread", "new", "--title", "x", "--json"], env))).toEqual(linked)
    expect(failure(await runSkein(["show", "thr_x", "--json"], env))).toEqual(linked)
    const readable = await runSkein(["show", "thr_x"], env)
    expect({ code: readable.code, stderr: readable.stderr }).toEqual({
      code: 1,
      stderr: `skein: ${linked.error.message}\n`
    })

    for (const mode of [0o640, 0o604]) {
      Fs.rmSync(Path.join(home, "token"))
      Fs.writeFileSync(Path.join(home, "token"), `${strong}\n`, { mode: 0o600 })
      Fs.chmodSync(Path.join(home, "token"), mode)
      expect(failure(await runSkein(["call", "thread.list"], env))).toEqual({
        code: 1,
        error: {
          _tag: "TokenFileError",
          message: `Cannot use the token file ${Path.join(home, "token")}: other users may read it (mode ${mode.toString(8)}); run chmod 600 on it, or delete it to get a new token.`
        }
      })
    }
    // not one connection reached the listener
    expect(listener.connections()).toBe(0)
    // a token given on purpose does not read the file at all: the listener sees the attempt
    const given = await runSkein(["call", "--token", strong, "thread.list"], env)
    expect(failure(given).error._tag).toBe("ConnectionFailed")
    expect(listener.connections()).toBeGreaterThan(0)
  }, 60_000)
})

describe("the data directory", () => {
  it("a daemon refuses one others may write to, or another user's, saying how to fix it; nothing is created", async () => {
    for (const [mode, who] of [
      [0o777, "every user"],
      [0o1777, "every user"],
      [0o770, "its group"]
    ] as const) {
      const home = tempDir("skein-open-home-")
      Fs.chmodSync(home, mode)
      for (const command of [["daemon", "--port", "0"], ["stdio"]]) {
        const refused = await runSkein(command, childEnv(home))
        expect(refused.stdout).toBe("")
        expect(failure(refused)).toEqual({
          code: 1,
          error: {
            _tag: "UnsafeDataDir",
            message: `Refusing the data directory ${home} ($SKEIN_HOME, --data-dir, or ~/.skein): ${who} may write to it (mode ${mode.toString(8)}) and so could replace the token or the database; run chmod 700 ${home}.`
          }
        })
      }
      expect(Fs.readdirSync(home)).toEqual([])
      // fixed as told, it starts
      Fs.chmodSync(home, 0o700)
      const daemon = await start(["--port", "0"], childEnv(home))
      expect(Fs.statSync(Path.join(home, "token")).mode & 0o777).toBe(0o600)
      daemon.kill()
      await daemon.exited
    }
    if (process.getuid?.() === 0) {
      // another user's directory (only root can make one to test with)
      const home = tempDir("skein-other-home-")
      Fs.chownSync(home, 4321, 4321)
      expect(failure(await runSkein(["daemon", "--port", "0"], childEnv(home)))).toEqual({
        code: 1,
        error: {
          _tag: "UnsafeDataDir",
          message: `Refusing the data directory ${home} ($SKEIN_HOME, --data-dir, or ~/.skein): it belongs to uid 4321, not to this user (uid 0), who could replace the token or the database in it; use a directory of your own (set SKEIN_HOME or pass --data-dir).`
        }
      })
      expect(Fs.readdirSync(home)).toEqual([])
    }
  }, 90_000)

  it("skein call refuses to read a token in a data directory others may write to, and sends nothing", async () => {
    const home = tempDir("skein-client-home-")
    Fs.writeFileSync(Path.join(home, "token"), `${strong}\n`, { mode: 0o600 })
    Fs.chmodSync(home, 0o777)
    const listener = await listen()
    const refused = await runSkein(["call", "--url", listener.url, "thread.list"], childEnv(home))
    expect(failure(refused)).toEqual({
      code: 1,
      error: {
        _tag: "UnsafeDataDir",
        message: `Refusing the data directory ${home} ($SKEIN_HOME, --data-dir, or ~/.skein): every user may write to it (mode 777) and so could replace the token or the database; run chmod 700 ${home}.`
      }
    })
    expect(listener.connections()).toBe(0)
  }, 30_000)
})

describe("the Host a request names", () => {
  it("a loopback daemon answers only loopback names, even with its token, unless --allow-host names another", async () => {
    const home = tempDir("skein-host-names-")
    const daemon = await start(["--port", "0"], childEnv(home))
    const token = tokenIn(home)
    const port = new URL(daemon.url).port
    for (const host of [`127.0.0.1:${port}`, "127.0.0.1", `localhost:${port}`, "LocalHost", `[::1]:${port}`]) {
      expect(await rawUpgrade(daemon.url, host, token), host).toEqual({ status: 101, body: "" })
    }
    const refusal = (host: string) => ({
      status: 421,
      body: `Skein here answers only requests addressed to a loopback name (127.0.0.1, localhost, [::1]), not to Host ${JSON.stringify(host)}. Start the daemon with --allow-host NAME to allow another name.`
    })
    for (const host of ["attacker.example", `attacker.example:${port}`, `localhost.attacker.example:${port}`]) {
      expect(await rawUpgrade(daemon.url, host, token), host).toEqual(refusal(host))
    }
    // the daemon says which name it refused, once
    const warning = `refused a request addressed to Host \\"attacker.example\\" (not a loopback name nor allowed by --allow-host)`
    for (let i = 0; i < 50 && !daemon.stderr().includes(warning); i++) await new Promise((r) => setTimeout(r, 20))
    expect(daemon.stderr().split(warning)).toHaveLength(2)
    // the CLI on the daemon's own url is unaffected
    const listed = await runSkein(["call", "--url", daemon.url, "thread.list"], childEnv(home))
    expect(listed.stdout.trim()).toBe("[]")

    // A database of its own: the first daemon holds the default one.
    const allowing = await start(
      [
        "--port",
        "0",
        "--db",
        Path.join(home, "allowing.db"),
        "--allow-host",
        "Skein.Test",
        "--allow-host",
        "other.test"
      ],
      childEnv(home)
    )
    const allowingPort = new URL(allowing.url).port
    for (const host of [`skein.test:${allowingPort}`, "other.test", `127.0.0.1:${allowingPort}`]) {
      expect(await rawUpgrade(allowing.url, host, token), host).toEqual({ status: 101, body: "" })
    }
    expect(await rawUpgrade(allowing.url, "attacker.example", token)).toEqual(refusal("attacker.example"))

    const bad = await runSkein(["daemon", "--port", "0", "--allow-host", "skein.test:7878"], childEnv(home))
    expect(failure(bad)).toEqual({
      code: 1,
      error: {
        _tag: "InvalidAllowedHost",
        message: `--allow-host "skein.test:7878" is not a host name: give a name or an address alone, without scheme, port or path, e.g. skein.internal or 192.168.1.4.`
      }
    })
  }, 60_000)

  it("the example embedding host, served on loopback, refuses a non-loopback Host too", async () => {
    const home = tempDir("skein-embedded-host-")
    const hostPath = fileURLToPath(new URL("../../packages/server/dist/src/examples/HostServer.js", import.meta.url))
    const child = spawn(process.execPath, [hostPath, "0"], { env: childEnv(home), stdio: ["ignore", "pipe", "pipe"] })
    try {
      const base = await new Promise<string>((resolve, reject) => {
        let out = ""
        const timer = setTimeout(() => reject(new Error("the example host did not start within 20 s")), 20_000)
        child.stdout.on("data", (d: Buffer) => {
          out += d.toString()
          const match = /example host listening on (http:\/\/\S+)/.exec(out)
          if (match) {
            clearTimeout(timer)
            resolve(match[1]!)
          }
        })
      })
      const url = `${base.replace(/^http/, "ws")}/skein/rpc`
      const port = new URL(url).port
      expect(await rawUpgrade(url, `127.0.0.1:${port}`, "")).toEqual({ status: 101, body: "" })
      expect((await rawUpgrade(url, "attacker.example", "")).status).toBe(421)
    } finally {
      if (child.exitCode === null && child.pid !== undefined) process.kill(child.pid, "SIGKILL")
    }
  }, 60_000)
})
