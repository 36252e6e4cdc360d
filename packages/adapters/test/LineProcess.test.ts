/**
 * LineProcess against real `node` children. Every child is ended by its scope;
 * each test checks by PID that none is left. The last tests host LineProcess in a
 * process of their own, to kill that process with its scopes open.
 */
import * as NodeChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { createInterface } from "node:readline"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Chunk, Effect, Exit, Logger, Scope, Stream } from "effect"
import { LineProcess, scopedEnv } from "../src/process/LineProcess.js"
import { isAlive } from "./support.js"

/** Alive and not a zombie waiting to be reaped (Linux: from /proc). */
const running = (pid: number): boolean => {
  try {
    const stat = Fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    return !stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")
  } catch {
    return false
  }
}

const node = (script: string, extra: { env?: Record<string, string>; graceMs?: number } = {}) =>
  LineProcess.spawn({
    command: process.execPath,
    args: ["-e", script],
    env: scopedEnv(extra.env ?? {}),
    graceMs: extra.graceMs,
    provider: "test"
  })

const ECHO = `
let buf = ""
process.stdin.setEncoding("utf8")
process.stdin.on("data", (c) => {
  buf += c
  let i
  while ((i = buf.indexOf("\\n")) >= 0) {
    const line = buf.slice(0, i); buf = buf.slice(i + 1)
    process.stdout.write(JSON.stringify({ echo: JSON.parse(line) }) + "\\n")
  }
})
process.stdin.on("end", () => process.exit(0))
`

describe("LineProcess", () => {
  it("scopedEnv passes PATH and HOME plus the extra variables, nothing else", () => {
    const env = scopedEnv({ FOO: "bar" })
    expect(Object.keys(env).sort()).toEqual(["FOO", "HOME", "PATH"])
    expect(env.PATH).toBe(process.env.PATH)
  })

  it.live("the child sees exactly the environment given", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const proc = yield* node(`console.log(JSON.stringify(Object.keys(process.env).sort()))`, {
          env: { SKEIN_TEST: "1" }
        })
        const lines = yield* Stream.runCollect(proc.messages)
        expect(Chunk.toReadonlyArray(lines)).toEqual([["HOME", "PATH", "SKEIN_TEST"]])
      })
    )
  )

  it.live("sends JSON lines and receives parsed replies in order", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const proc = yield* node(ECHO)
        yield* proc.send({ n: 1 })
        yield* proc.send({ n: 2, s: "line\nbreak" })
        const got = yield* proc.messages.pipe(Stream.take(2), Stream.runCollect)
        expect(Chunk.toReadonlyArray(got)).toEqual([{ echo: { n: 1 } }, { echo: { n: 2, s: "line\nbreak" } }])
      })
    )
  )

  it.live("a send is done once its line is out: a line larger than the pipe holds waits for the child to read", () =>
    Effect.scoped(
      Effect.gen(function* () {
        // The child reads nothing until told to (by a file appearing): stdin fills up.
        const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skein-lp-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true })))
        const go = Path.join(dir, "go")
        const proc = yield* node(
          `const fs = require("node:fs"); const t = setInterval(() => { if (fs.existsSync(${JSON.stringify(go)})) { clearInterval(t); ${ECHO} } }, 5)`
        )
        // Small lines: the pipe takes them, so each send is done though the child reads nothing.
        for (let n = 0; n < 3; n++) yield* proc.send({ n }).pipe(Effect.timeout(1000))
        // A line far above the high-water mark (and the pipe's buffer) waits until it is out.
        const big = "x".repeat(4 * 1024 * 1024)
        const sending = yield* Effect.fork(proc.send({ big }))
        yield* Effect.sleep(200)
        expect(sending.unsafePoll()).toBeNull()
        Fs.writeFileSync(go, "")
        expect(Exit.isSuccess(yield* sending.await.pipe(Effect.timeout(10_000)))).toBe(true)
        const got = yield* proc.messages.pipe(Stream.take(4), Stream.runCollect)
        expect(Chunk.toReadonlyArray(got).map((m) => Object.keys((m as { echo: object }).echo))).toEqual([
          ["n"],
          ["n"],
          ["n"],
          ["big"]
        ])
        expect((Chunk.unsafeGet(got, 3) as { echo: { big: string } }).echo.big.length).toBe(big.length)
      })
    )
  )

  it.live("readMessages hands every message to its reader at once, in order, and ends with stdout", () =>
    Effect.scoped(
      Effect.gen(function* () {
        // The child ends on its own (process.exit could cut its piped stdout short). Its
        // first lines come before anyone reads: they wait, and go first.
        const proc = yield* node(
          `for (let i = 0; i < 500; i++) console.log(JSON.stringify({ i })); console.log("not json"); ` +
            `setTimeout(() => { console.log('{"boom":true}'); console.log('{"i":500}') }, 100)`
        )
        yield* Effect.sleep(50)
        const seen: Array<unknown> = []
        const later: Array<string> = []
        yield* proc.readMessages((message) => {
          // A reader that throws loses that message only.
          if ((message as { boom?: boolean }).boom) throw new Error("reader defect")
          seen.push(message)
          // What the reader starts runs after it, in order.
          if ((message as { i: number }).i % 100 === 0) {
            proc.later(Effect.sync(() => void later.push(`after ${(message as { i: number }).i}`)))
          }
        })
        expect(seen).toEqual(Array.from({ length: 501 }, (_, i) => ({ i })))
        yield* Effect.sleep(10)
        expect(later).toEqual(["after 0", "after 100", "after 200", "after 300", "after 400", "after 500"])
        // One reader only.
        const twice = yield* Effect.exit(proc.readMessages(() => {}))
        expect(Exit.isFailure(twice) && Cause.isDie(twice.cause)).toBe(true)
      })
    )
  )

  it.live("skips stdout lines that are not JSON, keeps the stderr tail and reports the exit", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const proc = yield* node(
          `console.log("hello, not json"); console.log('{"a":1}'); console.log("{broken"); console.error("bad thing"); process.exit(3)`
        )
        const got = yield* Stream.runCollect(proc.messages)
        expect(Chunk.toReadonlyArray(got)).toEqual([{ a: 1 }])
        expect(yield* proc.exited).toEqual({ code: 3, signal: null })
        expect(yield* proc.stderrTail).toContain("bad thing")
        expect(yield* proc.describeExit).toMatch(/exited with code 3; stderr: bad thing/)
        const sent = yield* Effect.exit(proc.send({ late: true }))
        expect(Exit.isFailure(sent) && JSON.stringify(sent.cause)).toContain("crash")
      })
    )
  )

  it.live("skips a line over the bound with a warning, and reads long lines split across writes whole", () => {
    const warnings: Array<string> = []
    const logger = Logger.make(({ logLevel, message }) => {
      if (logLevel._tag === "Warning") warnings.push(String(message))
    })
    // Written in slices of an odd size, so that chunks end inside a two-byte character.
    const script = `
      const lines = [
        JSON.stringify({ over: "x".repeat(4 * 1024 * 1024) }) + "\\n",
        '{"after":1}\\n',
        JSON.stringify({ long: "é".repeat(300 * 1024) }) + "\\n",
        '{"end":true}'
      ]
      const bytes = Buffer.from(lines.join(""))
      for (let at = 0; at < bytes.length; at += 65_537) process.stdout.write(bytes.subarray(at, at + 65_537))
    `
    return Effect.scoped(
      Effect.gen(function* () {
        const proc = yield* LineProcess.spawn({
          command: process.execPath,
          args: ["-e", script],
          env: scopedEnv({}),
          provider: "test",
          maxLineBytes: 1024 * 1024
        })
        const got = Chunk.toReadonlyArray(yield* Stream.runCollect(proc.messages))
        expect(got).toEqual([{ after: 1 }, { long: "é".repeat(300 * 1024) }, { end: true }])
        expect(warnings).toHaveLength(1)
        expect(warnings[0]).toMatch(
          /^test: skipping a stdout line of 4194315 bytes, over the limit of 1048576: \{"over":"xxx/
        )
      })
    ).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
  })

  it.live("a command that cannot start fails with kind spawn", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const error = yield* Effect.flip(
          LineProcess.spawn({ command: "/nonexistent/skein-binary", args: [], env: scopedEnv(), provider: "ghost" })
        )
        expect(error._tag).toBe("ProviderFailure")
        expect(error.kind).toBe("spawn")
        expect(error.provider).toBe("ghost")
        expect(error.detail).toContain("/nonexistent/skein-binary")
      })
    )
  )

  it.live("closing the scope stops a polite child", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const proc = yield* Scope.extend(node(ECHO), scope)
      expect(isAlive(proc.pid)).toBe(true)
      yield* Scope.close(scope, Exit.void)
      expect(isAlive(proc.pid)).toBe(false)
    })
  )

  it.live("closing the scope SIGKILLs a child that ignores SIGTERM after graceMs", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const proc = yield* Scope.extend(
        node(
          `process.on("SIGTERM", () => {}); process.stdin.resume(); console.log("{}"); setInterval(() => {}, 1000)`,
          {
            graceMs: 300
          }
        ),
        scope
      )
      // Wait until the child has installed its SIGTERM handler.
      yield* proc.messages.pipe(Stream.take(1), Stream.runDrain)
      const started = Date.now()
      yield* Scope.close(scope, Exit.void)
      const elapsed = Date.now() - started
      expect(isAlive(proc.pid)).toBe(false)
      expect(yield* proc.exited).toEqual({ code: null, signal: "SIGKILL" })
      expect(elapsed).toBeGreaterThanOrEqual(250)
      expect(elapsed).toBeLessThan(3000)
    })
  )

  it.live("closing the scope also ends what the child started (its process group), even after the child exited", () =>
    Effect.gen(function* () {
      for (const leaderExits of [false, true]) {
        const scope = yield* Scope.make()
        const proc = yield* Scope.extend(
          node(
            `const c = require("child_process").spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
             console.log(JSON.stringify({ grandchild: c.pid }));
             ${leaderExits ? "setTimeout(() => process.exit(0), 50)" : "process.stdin.resume()"}`
          ),
          scope
        )
        const [first] = Chunk.toReadonlyArray(yield* proc.messages.pipe(Stream.take(1), Stream.runCollect))
        const grandchild = (first as { grandchild: number }).grandchild
        if (leaderExits) yield* proc.exited
        expect(running(grandchild)).toBe(true)
        yield* Scope.close(scope, Exit.void)
        for (let i = 0; i < 100 && running(grandchild); i++) yield* Effect.sleep("20 millis")
        expect(running(grandchild)).toBe(false)
      }
    })
  )

  it.live("a host killed with SIGKILL leaves no child behind: its group is ended, a child's own child included", () =>
    Effect.promise(async () => {
      // A child that does not exit when its stdin closes, with a child of its own.
      const stubborn = `const c = require("child_process").spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
        console.log(JSON.stringify({ grandchild: c.pid }));
        process.stdin.on("end", () => {}).resume();
        setInterval(() => {}, 1000)`
      const { host, child, first, watcher } = await hostWith(stubborn, "wait")
      const pids = [child, (first as { grandchild: number }).grandchild]
      expect([...pids, watcher].every(running)).toBe(true)
      host.kill("SIGKILL")
      expect(await until(() => !pids.some(running), 10_000), `still running: ${pids.filter(running)}`).toBe(true)
      expect(await until(() => !running(watcher), 5_000)).toBe(true)
    })
  )

  it.live(
    "the watcher keeps no host alive: a host whose scopes are closed exits on its own, and the watcher with it",
    () =>
      Effect.promise(async () => {
        const { host, child, watcher } = await hostWith(ECHO, "close")
        expect(await until(() => host.exitCode !== null, 10_000)).toBe(true)
        expect(host.exitCode).toBe(0)
        expect(await until(() => !running(child) && !running(watcher), 5_000)).toBe(true)
      })
  )
})

const until = async (check: () => boolean, timeoutMs: number): Promise<boolean> => {
  const deadline = Date.now() + timeoutMs
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
  return check()
}

/**
 * A Node process that spawns `script` through the compiled LineProcess (npm test builds
 * it first), sends it one line and prints, once the child's first message is in, the
 * child's PID, that message and the orphan watcher's PID; then it waits to be killed
 * ("wait"), or closes the child's scope and returns ("close").
 */
const hostWith = async (script: string, mode: "wait" | "close") => {
  const dist = (file: string) => JSON.stringify(new URL(`../dist/src/process/${file}`, import.meta.url).href)
  const program = `
    import { Effect, Exit, Scope, Stream } from "effect"
    import { LineProcess } from ${dist("LineProcess.js")}
    import { watcherPid } from ${dist("OrphanWatcher.js")}
    const scope = Effect.runSync(Scope.make())
    const proc = await Effect.runPromise(Scope.extend(LineProcess.spawn({
      command: process.execPath, args: ["-e", ${JSON.stringify(script)}], env: {}, provider: "test"
    }), scope))
    await Effect.runPromise(proc.send({ hello: 1 }))
    const first = await Effect.runPromise(Stream.runHead(proc.messages))
    console.log(JSON.stringify({ child: proc.pid, first: first.value, watcher: watcherPid() }))
    if (${JSON.stringify(mode)} === "close") {
      await new Promise((resolve) => setTimeout(resolve, 200))
      await Effect.runPromise(Scope.close(scope, Exit.void))
    } else setInterval(() => {}, 1000)
  `
  const host = NodeChildProcess.spawn(process.execPath, ["--input-type=module", "-e", program], {
    cwd: new URL("..", import.meta.url).pathname,
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stderr = ""
  host.stderr.on("data", (d) => (stderr += String(d)))
  const line = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the host did not report in time: ${stderr}`)), 20_000)
    createInterface({ input: host.stdout }).once("line", (l) => {
      clearTimeout(timer)
      resolve(l)
    })
  })
  const reported = JSON.parse(line) as { readonly child: number; readonly first: unknown; readonly watcher: number }
  return { host, ...reported }
}
