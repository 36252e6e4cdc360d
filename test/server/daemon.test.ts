/**
 * The `skein` binary as a user runs it: a daemon child process on 127.0.0.1 port 0,
 * `skein call` and the human commands from other child processes, bind refusal,
 * graceful SIGTERM with a run in flight and recovery on restart, stdio, the demo.
 */
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { binPath, childEnv, runSkein, tempDir, tokenIn, trackDaemons } from "./support.js"

const start = trackDaemons()

const callJson = async (env: Record<string, string>, ...args: Array<string>) => {
  const result = await runSkein(["call", ...args], env)
  if (result.code !== 0) throw new Error(`skein call ${args.join(" ")} failed (${result.code}): ${result.stderr}`)
  return JSON.parse(result.stdout)
}

describe("skein daemon and skein call", () => {
  it("serves calls from child processes; typed errors go to stderr as JSON", async () => {
    const home = tempDir("skein-daemon-")
    const d = await start(["--port", "0"], childEnv(home))
    expect(d.url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/rpc$/)
    expect(d.stdout().trim().split("\n")).toHaveLength(1)
    const env = childEnv(home, { SKEIN_URL: d.url })

    const thread = await callJson(env, "thread.create", JSON.stringify({ title: "from the cli" }))
    expect(thread.title).toBe("from the cli")
    const run = await callJson(
      env,
      "run.start",
      JSON.stringify({ threadId: thread.id, provider: "alpha", message: "hello", wait: true })
    )
    expect(run.status).toBe("completed")
    expect(run.items.some((i: { type: string }) => i.type === "assistant_message")).toBe(true)

    // a stream: NDJSON, one event per line
    const events = await runSkein(
      ["call", "--limit", "3", "thread.events", JSON.stringify({ threadId: thread.id })],
      env
    )
    expect(events.code).toBe(0)
    const lines = events.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l))
    expect(lines.map((e) => e.threadSequence)).toEqual([1, 2, 3])
    expect(lines[0].event._tag).toBe("ThreadCreated")

    // typed errors: exit 1, {"_tag", "message", …fields} on stderr
    const missing = await runSkein(["call", "thread.get", JSON.stringify({ threadId: "thr_nope" })], env)
    expect(missing.code).not.toBe(0)
    const error = JSON.parse(missing.stderr.trim())
    expect(error).toMatchObject({ _tag: "ThreadNotFound", threadId: "thr_nope" })
    expect(error.message).toContain("thr_nope")

    const badJson = await runSkein(["call", "thread.create", "{nope"], env)
    expect(badJson.code).not.toBe(0)
    expect(JSON.parse(badJson.stderr.trim())._tag).toBe("InvalidInput")
    const unknown = await runSkein(["call", "thread.explode", "{}"], env)
    expect(JSON.parse(unknown.stderr.trim())).toMatchObject({ _tag: "InvalidInput" })

    // human commands
    const shown = await runSkein(["show", thread.id], env)
    expect(shown.code).toBe(0)
    expect(shown.stdout).toContain("run 1  alpha A1  completed")
    expect(shown.stdout).toContain("A1 (alpha) native 1")
    const sent = await runSkein(["send", thread.id, "beta", "again [[decide:ship it]]"], env)
    expect(sent.code).toBe(0)
    expect(sent.stdout.trim().length).toBeGreaterThan(0)
    const newThread = await runSkein(["thread", "new", "--title", "human", "--json"], env)
    expect(JSON.parse(newThread.stdout).title).toBe("human")
    const followed = await runSkein(["follow", "--limit", "2", thread.id], env)
    expect(followed.stdout.trim().split("\n")[0]).toMatch(/^#1 \d\d:\d\d:\d\d\.\d{3} thread created "from the cli"$/)
  }, 90_000)

  it("refuses a non-loopback host without a token, or with a weak one, with a clear error", async () => {
    const home = tempDir("skein-bind-")
    for (const extra of [[], ["--token", "   "], ["--token", "tok-123"]]) {
      const result = await runSkein(["daemon", "--host", "0.0.0.0", "--port", "0", ...extra], childEnv(home))
      expect(result.code).not.toBe(0)
      const error = JSON.parse(result.stderr.trim())
      expect(error._tag).toBe(extra.length === 0 || extra[1]!.trim() === "" ? "InsecureBind" : "WeakToken")
      expect(error.message).toContain("--token")
      expect(result.stdout).not.toContain("listening")
    }
    // a weak token is refused on loopback too
    const weak = await runSkein(["daemon", "--port", "0"], childEnv(home, { SKEIN_TOKEN: "short" }))
    expect(JSON.parse(weak.stderr.trim())).toMatchObject({ _tag: "WeakToken" })
  }, 30_000)

  it("by default: generates a token in DATA_DIR/token (0600) that the CLI picks up; without it, 401", async () => {
    const home = tempDir("skein-default-")
    const d = await start(["--port", "0"], childEnv(home))
    const tokenFile = Path.join(home, "token")
    expect(Fs.statSync(tokenFile).mode & 0o777).toBe(0o600)
    expect(tokenIn(home)).toMatch(/^[A-Za-z0-9_-]{43}$/)
    for (let i = 0; i < 50 && !d.stderr().includes(tokenFile); i++) await new Promise((r) => setTimeout(r, 20))
    expect(d.stderr()).toContain(tokenFile)
    expect(d.stdout()).not.toContain(tokenIn(home))
    // the CLI reads the file of its SKEIN_HOME
    const ok = await runSkein(["call", "--url", d.url, "thread.list"], childEnv(home))
    expect(ok.code).toBe(0)
    // another home has no token: refused at the handshake, with a message naming the file it looked for
    const elsewhere = tempDir("skein-elsewhere-")
    const refused = await runSkein(["call", "--url", d.url, "thread.list"], childEnv(elsewhere))
    expect(refused.code).not.toBe(0)
    const error = JSON.parse(refused.stderr.trim())
    expect(error).toMatchObject({ _tag: "Unauthorized", status: 401 })
    expect(error.message).toContain(Path.join(elsewhere, "token"))
    // the token lasts across restarts
    const before = tokenIn(home)
    d.kill()
    await d.exited
    await start(["--port", "0"], childEnv(home))
    expect(tokenIn(home)).toBe(before)
  }, 60_000)

  it("with a token: a wrong token is refused, the right one works", async () => {
    const home = tempDir("skein-token-")
    const token = "tok-0123456789-abcdefghij-KLMNOPQRST"
    const d = await start(["--port", "0", "--token", token], childEnv(home))
    expect(Fs.existsSync(Path.join(home, "token"))).toBe(false)
    const wrong = await runSkein(
      ["call", "--url", d.url, "thread.list"],
      childEnv(home, { SKEIN_TOKEN: "tok-9999999999-abcdefghij-KLMNOPQRST" })
    )
    expect(wrong.code).not.toBe(0)
    const error = JSON.parse(wrong.stderr.trim())
    expect(error._tag).toBe("Unauthorized")
    expect(error.message).not.toContain("tok-9999999999")
    const right = await runSkein(["call", "--url", d.url, "--token", token, "thread.list"], childEnv(home))
    expect(right.code).toBe(0)
    expect(JSON.parse(right.stdout)).toEqual([])
  }, 30_000)

  it("refuses a bad --allow-origin and a config with no providers", async () => {
    const home = tempDir("skein-config-")
    const origin = await runSkein(["daemon", "--port", "0", "--allow-origin", "localhost:5173"], childEnv(home))
    expect(origin.code).not.toBe(0)
    expect(JSON.parse(origin.stderr.trim())).toMatchObject({ _tag: "InvalidOrigin" })
    const config = Path.join(home, "empty.json")
    Fs.writeFileSync(config, JSON.stringify({ providers: {} }))
    for (const command of [["daemon", "--port", "0"], ["stdio"]]) {
      const empty = await runSkein([...command, "--config", config], childEnv(home))
      expect(empty.code).not.toBe(0)
      const error = JSON.parse(empty.stderr.trim())
      expect(error._tag).toBe("NoProviders")
      expect(error.message).toContain(config)
    }
  }, 30_000)

  it("SIGTERM during a long run: exits 0; on restart the run is interrupted and nothing acknowledged is lost", async () => {
    const home = tempDir("skein-sigterm-")
    const db = Path.join(home, "state", "skein.db")
    const d = await start(["--port", "0", "--db", db], childEnv(home))
    const env = childEnv(home, { SKEIN_URL: d.url })
    const thread = await callJson(env, "thread.create", JSON.stringify({ title: "survives" }))
    const done = await callJson(
      env,
      "run.start",
      JSON.stringify({ threadId: thread.id, provider: "alpha", message: "first", wait: true })
    )
    expect(done.status).toBe("completed")
    const slow = await callJson(
      env,
      "run.start",
      JSON.stringify({ threadId: thread.id, provider: "alpha", message: "[[sleep:10000]] slow" })
    )
    expect(slow.ordinal).toBe(2)
    // wait (bounded) until the run is running at the provider
    for (let i = 0; i < 50; i++) {
      const view = await callJson(env, "thread.get", JSON.stringify({ threadId: thread.id }))
      if (view.runs[1]?.status === "running") break
      await new Promise((r) => setTimeout(r, 100))
    }
    const t0 = Date.now()
    process.kill(d.child.pid!, "SIGTERM")
    const exit = await d.exited
    expect(exit.code).toBe(0)
    expect(Date.now() - t0).toBeLessThan(9_000)

    const again = await start(["--port", "0", "--db", db], childEnv(home))
    const view = await callJson(
      childEnv(home, { SKEIN_URL: again.url }),
      "thread.get",
      JSON.stringify({ threadId: thread.id })
    )
    expect(view.thread.title).toBe("survives")
    expect(view.runs.map((r: { status: string }) => r.status)).toEqual(["completed", "interrupted"])
    expect(view.runs[0].items.some((i: { type: string }) => i.type === "assistant_message")).toBe(true)
  }, 90_000)

  it("serves the RPC over stdio, one JSON message per line", async () => {
    const home = tempDir("skein-stdio-")
    const child = spawn(process.execPath, [binPath, "stdio"], { env: childEnv(home), stdio: ["pipe", "pipe", "pipe"] })
    try {
      const replies: Array<any> = []
      let buffer = ""
      const got = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no stdio replies; got ${JSON.stringify(replies)}`)), 20_000)
        child.stdout.on("data", (d: Buffer) => {
          buffer += d.toString()
          const lines = buffer.split("\n")
          buffer = lines.pop()!
          for (const l of lines) if (l.trim() !== "") replies.push(JSON.parse(l))
          if (replies.filter((r) => r._tag === "Exit").length >= 3) {
            clearTimeout(timer)
            resolve()
          }
        })
      })
      child.stdin.write(
        JSON.stringify({
          _tag: "Request",
          id: "1",
          tag: "thread.create",
          payload: { title: "over stdio" },
          headers: []
        }) + "\n"
      )
      child.stdin.write("not json at all\n")
      child.stdin.write(JSON.stringify({ _tag: "Request", id: "2", tag: "nope", payload: {}, headers: [] }) + "\n")
      child.stdin.write(
        JSON.stringify({ _tag: "Request", id: "3", tag: "thread.list", payload: {}, headers: [] }) + "\n"
      )
      await got
      const byId = new Map(replies.filter((r) => r._tag === "Exit").map((r) => [r.requestId, r]))
      expect(byId.get("1").exit.value.title).toBe("over stdio")
      expect(byId.get("2").exit.cause.error._tag).toBe("InvalidInput")
      expect(byId.get("3").exit.value.map((t: { title: string }) => t.title)).toEqual(["over stdio"])
      expect(replies.some((r) => r._tag === "Defect")).toBe(true)
    } finally {
      if (child.exitCode === null && child.pid !== undefined) process.kill(child.pid, "SIGKILL")
    }
  }, 40_000)

  it("skein demo runs the seed example offline and prints the seed's coverage", async () => {
    const home = tempDir("skein-demo-")
    const result = await runSkein(["demo"], childEnv(home), 90_000)
    expect(result.stderr).toBe("")
    expect(result.code).toBe(0)
    expect(result.stdout).toContain("C1 (codex)  native 1,2,3,4,5,9  handoffs H2(6-8)")
    expect(result.stdout).toContain("L1 (claude) native 6,7,8  handoffs H1(1-5)")
    expect(result.stdout).toMatch(/H1 full_thread_summary covers 1-5 -> L1/)
    expect(result.stdout).toMatch(/H2 delta_since_target_last_seen covers 6-8 -> C1/)
    expect(result.stdout).toContain("seed check: ok")
    // The lineage part: fork, merge-back, subagent, rollback, tree.
    expect(result.stdout).toContain("seed run 10 on codex took in 2 handoff(s): recall:append-only=yes recall:500=yes")
    expect(result.stdout).toMatch(/├─ fork thr_\w+ "try a log instead" from run 1/)
    expect(result.stdout).toMatch(/└─ subagent thr_\w+/)
    expect(result.stdout).toContain("lineage check: ok")
  }, 100_000)

  it("lineage over the CLI: fork, send, merge-back, rollback, tree, subagent.spawn", async () => {
    const home = tempDir("skein-lineage-cli-")
    const d = await start(["--port", "0"], childEnv(home))
    const env = childEnv(home, { SKEIN_URL: d.url })
    const ok = async (...args: Array<string>) => {
      const result = await runSkein(args, env)
      if (result.code !== 0) throw new Error(`skein ${args.join(" ")} failed (${result.code}): ${result.stderr}`)
      return result.stdout.trim()
    }
    const thread = await ok("thread", "new", "--title", "cli lineage")
    await ok("send", thread, "alpha", "the word is OLIVE")
    await ok("send", thread, "alpha", "the second word is PEAR")
    const runs = JSON.parse(await ok("show", thread, "--json")).runs as Array<{ id: string }>
    const fork = await ok("fork", thread, "--run", runs[0]!.id, "--title", "side path")
    expect(await ok("send", fork, "beta", "[[recall:OLIVE]] [[recall:PEAR]] and RAISIN")).toMatch(
      /recall:OLIVE=yes[\s\S]*recall:PEAR=no/
    )
    expect(await ok("merge-back", fork)).toMatch(/^xfr_\w+ merge_back pending into thr_/)
    expect(await ok("send", thread, "alpha", "[[recall:RAISIN]]")).toContain("recall:RAISIN=yes")
    const spawned = JSON.parse(
      await ok(
        "call",
        "subagent.spawn",
        JSON.stringify({ parentThreadId: thread, provider: "beta", prompt: "look around" })
      )
    )
    expect(spawned.thread.lineage.relationshipToParent).toBe("subagent")
    const rolled = await ok("rollback", thread, "2")
    expect(rolled).toBe(`thread ${thread} rolled back to run 2: run 3 rolled back`)
    const tree = await ok("tree", thread)
    expect(tree).toMatch(/^thread thr_\w+ "cli lineage"  2 run\(s\), 1 rolled back/)
    expect(tree).toContain(`fork ${fork} "side path" from run 1`)
    expect(tree).toContain(`subagent ${spawned.thread.id}`)
    const failed = await runSkein(["merge-back", thread, "--json"], env)
    expect(failed.code).not.toBe(0)
    expect(JSON.parse(failed.stderr.trim())._tag).toBe("NotAFork")
  }, 60_000)
})
