/**
 * One daemon per database, as a user meets it through the `skein` executable: a second
 * daemon (or `skein stdio`) on a database in use refuses at start, naming the holder's
 * pid, before it recovers or writes anything; the lock goes with its holder, SIGKILL
 * included; two daemons started at the same instant end with exactly one serving.
 */
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { binPath, childEnv, runProcess, runSkein, startDaemon, tempDir, trackDaemons } from "./support.js"

const start = trackDaemons()

/** The refusal a daemon or stdio process prints for a database that `pid` holds. */
const inUse = (db: string, pid: number) => ({
  _tag: "DatabaseInUse",
  path: db,
  pid,
  message: `The database ${db} is in use by another Skein (process ${pid}); one daemon or embedded runtime serves a database at a time. Stop that one, or give this one another --db.`
})

const hostPath = fileURLToPath(new URL("../../packages/server/dist/src/examples/HostServer.js", import.meta.url))

const lastJsonLine = (text: string): unknown => JSON.parse(text.trim().split("\n").at(-1)!)

/** Runs `node ARGS` with `stdin` as its input; resolves when the process exits (SIGKILL after `timeoutMs`). */
const runNode = (args: ReadonlyArray<string>, env: Record<string, string>, stdin: string, timeoutMs = 20_000) =>
  runProcess(process.execPath, args, env, { stdin, timeoutMs })

describe("one daemon per database", () => {
  it("a second daemon refuses with the first's pid, its live run untouched; after SIGKILL of the first, a new one starts and serves", async () => {
    const home = tempDir("skein-dblock-")
    const db = Path.join(home, "skein.db")
    const first = await start(["--port", "0", "--db", db], childEnv(home))
    const env = childEnv(home, { SKEIN_URL: first.url })
    const created = JSON.parse((await runSkein(["call", "thread.create", '{"title":"kept"}'], env)).stdout) as {
      id: string
    }

    // A run in flight on the first daemon while the others try: it must not be touched.
    const live = runSkein(
      [
        "call",
        "run.start",
        JSON.stringify({ threadId: created.id, provider: "alpha", message: "[[sleep:4000]] live", wait: true })
      ],
      env,
      30_000
    )
    const running = async () => {
      const view = await runSkein(["call", "thread.get", JSON.stringify({ threadId: created.id })], env)
      return (JSON.parse(view.stdout) as { runs: Array<{ status: string }> }).runs[0]?.status === "running"
    }
    for (let i = 0; i < 50 && !(await running()); i++) await new Promise((r) => setTimeout(r, 100))
    expect(await running()).toBe(true)

    const second = await runSkein(["daemon", "--port", "0", "--db", db], childEnv(home))
    expect(second.code).toBe(1)
    expect(second.stdout).not.toContain("skein listening")
    expect(lastJsonLine(second.stderr)).toEqual(inUse(db, first.child.pid!))
    // `skein stdio` on the same database refuses the same way.
    const stdio = await runNode([binPath, "stdio", "--db", db], childEnv(home), "")
    expect(stdio.code).toBe(1)
    expect(lastJsonLine(stdio.stderr)).toEqual(inUse(db, first.child.pid!))
    // So does the example host, which embeds Skein with SkeinEmbedding.layer (on SKEIN_HOME/skein.db).
    const host = await runNode([hostPath, "0"], childEnv(home), "")
    expect(host.code).not.toBe(0)
    expect(host.stdout).not.toContain("listening")
    // NodeRuntime.runMain logs the failure (to stdout).
    expect(host.stdout + host.stderr).toContain(`DatabaseInUse: ${inUse(db, first.child.pid!).message}`)
    // The first daemon was left alone: its client gets its answer, and it still serves.
    const answer = await live
    expect(answer.code).toBe(0)
    expect((JSON.parse(answer.stdout) as { status: string }).status).toBe("completed")
    const listed = await runSkein(["call", "thread.list", "{}"], env)
    expect((JSON.parse(listed.stdout) as Array<{ id: string }>).map((t) => t.id)).toEqual([created.id])

    first.kill()
    expect((await first.exited).signal).toBe("SIGKILL")
    const next = await start(["--port", "0", "--db", db], childEnv(home))
    const got = await runSkein(["call", "thread.get", JSON.stringify({ threadId: created.id })], {
      ...env,
      SKEIN_URL: next.url
    })
    expect(got.code).toBe(0)
    expect((JSON.parse(got.stdout) as { thread: { title: string } }).thread.title).toBe("kept")
  })

  it("two daemons started at the same instant: exactly one serves, the other names it", async () => {
    const home = tempDir("skein-dblock-")
    const db = Path.join(home, "skein.db")
    const outcomes = await Promise.allSettled([
      startDaemon(["--port", "0", "--db", db], childEnv(home)),
      startDaemon(["--port", "0", "--db", db], childEnv(home))
    ])
    const serving = outcomes.flatMap((o) => (o.status === "fulfilled" ? [o.value] : []))
    try {
      const refused = outcomes.flatMap((o) => (o.status === "rejected" ? [(o.reason as Error).message] : []))
      expect(serving).toHaveLength(1)
      expect(refused).toHaveLength(1)
      expect(refused[0]).toMatch(/^daemon exited \(1\) before listening; stderr: /)
      expect(lastJsonLine(refused[0]!.replace(/^daemon exited \(1\) before listening; stderr: /, ""))).toEqual(
        inUse(db, serving[0]!.child.pid!)
      )
      const listed = await runSkein(["call", "thread.list", "{}"], childEnv(home, { SKEIN_URL: serving[0]!.url }))
      expect(listed.code).toBe(0)
    } finally {
      for (const d of serving) d.kill()
    }
  })
})
