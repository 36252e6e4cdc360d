/**
 * `skein daemon --store postgresql://…`, as a user meets it through the executable: the
 * daemon keeps its threads in a real PostgreSQL (test/support/postgres.ts), named on the
 * command line or in SKEIN_STORE; a second
 * daemon on the same database refuses, naming the first's pid and not the password;
 * another daemon after the first stopped serves what the first recorded. Bad options are
 * refused before anything is opened.
 */
import { describe, expect, it } from "vitest"
import { usePostgres } from "../support/usePostgres.js"
import { childEnv, runSkein, tempDir, trackDaemons } from "./support.js"

const start = trackDaemons()

const pg = usePostgres()

const lastJsonLine = (text: string): Record<string, unknown> =>
  JSON.parse(text.trim().split("\n").at(-1)!) as Record<string, unknown>

describe("skein daemon --store", () => {
  it("serves from PostgreSQL, refuses a second daemon on it, and a later daemon finds what the first recorded", async () => {
    const home = tempDir("skein-pgdaemon-")
    const first = await start(["--port", "0", "--store", pg.url()], childEnv(home))
    const env = childEnv(home, { SKEIN_URL: first.url })
    const created = JSON.parse((await runSkein(["call", "thread.create", '{"title":"in postgres"}'], env)).stdout) as {
      id: string
    }
    const run = await runSkein(
      ["call", "run.start", JSON.stringify({ threadId: created.id, provider: "alpha", message: "hello", wait: true })],
      env,
      30_000
    )
    expect((JSON.parse(run.stdout) as { status: string }).status).toBe("completed")

    const second = await runSkein(["daemon", "--port", "0", "--store", pg.url()], childEnv(home))
    expect(second.code).toBe(1)
    const refusal = lastJsonLine(second.stderr)
    expect(refusal).toMatchObject({ _tag: "DatabaseInUse", pid: first.child.pid })
    expect(refusal.message).toContain("give this one another --store")
    expect(second.stderr).not.toContain(new URL(pg.url()).password)

    first.child.kill("SIGTERM")
    expect((await first.exited).code).toBe(0)
    // The URL from the environment this time (its password then stays out of the process list).
    const later = await start(["--port", "0"], childEnv(home, { SKEIN_STORE: pg.url() }))
    const view = await runSkein(
      ["call", "thread.get", JSON.stringify({ threadId: created.id })],
      childEnv(home, { SKEIN_URL: later.url })
    )
    const thread = JSON.parse(view.stdout) as { thread: { title: string }; runs: Array<{ status: string }> }
    expect([thread.thread.title, thread.runs.map((r) => r.status)]).toEqual(["in postgres", ["completed"]])
  })

  it("a cluster's runner refuses a database a daemon alone serves, and the other way round", async () => {
    const home = tempDir("skein-pgdaemon-")
    const alone = await start(["--port", "0", "--store", pg.url()], childEnv(home))
    const runner = await runSkein(["daemon", "--port", "0", "--store", pg.url(), "--cluster"], childEnv(home))
    expect([runner.code, lastJsonLine(runner.stderr)]).toMatchObject([
      1,
      { _tag: "DatabaseInUse", pid: alone.child.pid }
    ])
    alone.child.kill("SIGTERM")
    await alone.exited
    const clustered = await start(["--port", "0", "--store", pg.url(), "--cluster"], childEnv(home))
    const second = await runSkein(["daemon", "--port", "0", "--store", pg.url()], childEnv(home))
    expect([second.code, lastJsonLine(second.stderr)]).toMatchObject([
      1,
      { _tag: "DatabaseInUse", pid: clustered.child.pid }
    ])
  })

  it("refuses --db with --store, and a --store that is not a postgresql:// URL", async () => {
    const home = tempDir("skein-pgdaemon-")
    const both = await runSkein(["daemon", "--port", "0", "--db", `${home}/x.db`, "--store", pg.url()], childEnv(home))
    expect([both.code, lastJsonLine(both.stderr)._tag]).toEqual([1, "InvalidInput"])
    expect(both.stderr).toContain("not both")
    const file = await runSkein(["daemon", "--port", "0", "--store", `${home}/x.db`], childEnv(home))
    expect([file.code, lastJsonLine(file.stderr)._tag]).toEqual([1, "InvalidInput"])
    expect(file.stderr).toContain("a SQLite file goes to --db")
  })
})
