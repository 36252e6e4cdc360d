/**
 * A daemon SIGKILLed in the middle of a rollback's file restore: at its next start the
 * restore it owed is finished before it serves anyone, the retried command answers
 * with what the restore really did, and nothing the user had is lost (the backup taken
 * before the first file changed holds it). git is slowed by a wrapper first on the
 * daemon's PATH, so that the kill lands inside the restore.
 */
import { describe, expect, it } from "@effect/vitest"
import { CommandId, ProviderName, type ThreadId } from "@skein/domain"
import { makeSkeinClient } from "@skein/server"
import { Effect, Schedule } from "effect"
import { execFileSync } from "node:child_process"
import { createRequire } from "node:module"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { filesOf, git } from "../support/gitRepo.js"
import { childEnv, tempDir, trackDaemons } from "./support.js"

const start = trackDaemons()
const alpha = ProviderName.make("alpha")

/** A repository with a few hundred files in `ws/`, so that a restore's `git add` has work to do. */
const makeRepository = (dir: string) => {
  const repo = Path.join(Fs.realpathSync(dir), "repo")
  const ws = Path.join(repo, "ws")
  Fs.mkdirSync(Path.join(ws, "src"), { recursive: true })
  Fs.mkdirSync(Path.join(repo, "other"))
  for (let i = 0; i < 300; i++) Fs.writeFileSync(Path.join(ws, "src", `f${i}.txt`), `file ${i}\n`)
  Fs.writeFileSync(Path.join(repo, "other", "user.txt"), "user\n")
  git(repo, "init", "-q", "-b", "main")
  git(repo, "add", "-A")
  git(repo, "commit", "-q", "-m", "init")
  return { repo, ws }
}

/** A `git` first on the PATH that sleeps before each call while `marker` exists. */
const slowGit = (dir: string, marker: string) => {
  const real = execFileSync("sh", ["-c", "command -v git"], { encoding: "utf8" }).trim()
  const bin = Path.join(dir, "bin")
  Fs.mkdirSync(bin)
  Fs.writeFileSync(
    Path.join(bin, "git"),
    `#!/bin/sh\nif [ -e ${JSON.stringify(marker)} ]; then sleep 1; fi\nexec ${real} "$@"\n`
  )
  Fs.chmodSync(Path.join(bin, "git"), 0o755)
  return bin
}

const killedMidRestore = (when: "as the restore starts" | "after the backup is saved") =>
  Effect.scoped(
    Effect.gen(function* () {
      const home = tempDir("skein-restore-crash-")
      const db = Path.join(home, "skein.db")
      const marker = Path.join(home, "slow")
      const bin = slowGit(home, marker)
      const env = childEnv(home, { PATH: `${bin}:${process.env["PATH"] ?? "/usr/bin:/bin"}` })
      const { repo, ws } = makeRepository(home)

      const first = yield* Effect.promise(() => start(["--port", "0", "--db", db], env))
      const client = yield* makeSkeinClient({ url: first.url, dataDir: home })
      const thread = yield* client.thread.create({ title: "restore crash", workspace: ws })
      const threadId = thread.id as ThreadId
      for (const message of [
        "[[write:a.txt:one]]",
        "[[write:b.txt:two]] [[write:src/f1.txt:changed]]",
        "[[write:c.txt:three]]"
      ]) {
        yield* client.run.start({ threadId, provider: alpha, message, wait: true })
      }
      // Every checkpoint taken before the rollback (it waits for them anyway).
      yield* client.thread.get({ threadId }).pipe(
        Effect.filterOrFail((v) => v.checkpoints.length === 3 && v.checkpoints.every((c) => c.status === "ready")),
        Effect.retry(Schedule.spaced("50 millis").pipe(Schedule.upTo("20 seconds")))
      )
      Fs.writeFileSync(Path.join(ws, "handmade.txt"), "by hand\n")
      const beforeRestore = filesOf(repo, "utf8")

      const commandId = CommandId.make(`restore-crash-${when.length}`)
      const rollback = { threadId, toRunOrdinal: 1, restoreFiles: true, commandId }
      Fs.writeFileSync(marker, "")
      yield* Effect.fork(client.thread.rollback(rollback).pipe(Effect.ignore))
      const backups = () =>
        git(repo, "for-each-ref", "--format=%(refname)", `refs/skein/${threadId}/`)
          .split("\n")
          .filter((ref) => ref !== "" && !/\/\d+$/.test(ref))
      if (when === "as the restore starts") {
        yield* client.thread.get({ threadId }).pipe(
          Effect.filterOrFail((v) => v.thread.restore?.status === "owed"),
          Effect.retry(Schedule.spaced("20 millis").pipe(Schedule.upTo("20 seconds")))
        )
      } else {
        yield* Effect.sync(backups).pipe(
          Effect.filterOrFail((refs) => refs.length === 1),
          Effect.retry(Schedule.spaced("20 millis").pipe(Schedule.upTo("30 seconds")))
        )
      }
      first.kill()
      yield* Effect.promise(() => first.exited)
      Fs.rmSync(marker)
      // A git the daemon had started outlives it (its own process group) and finishes its step.
      yield* Effect.sleep("1500 millis")
      // The restore was cut short: the thread says it is still owed.
      const owed = execFileSync(
        "node",
        [
          "-e",
          `
        const db = new (require(${JSON.stringify(createRequire(import.meta.url).resolve("better-sqlite3"))}))(${JSON.stringify(db)}, { readonly: true });
        const row = db.prepare("SELECT json_extract(data, '$.restore.status') AS s FROM threads WHERE id = ?").get(${JSON.stringify(threadId)});
        process.stdout.write(String(row.s))`
        ],
        { encoding: "utf8" }
      )
      expect(owed).toBe("owed")

      // The next start finishes it before it serves anyone.
      const second = yield* Effect.promise(() => start(["--port", "0", "--db", db], env))
      const again = yield* makeSkeinClient({ url: second.url, dataDir: home })
      const view = yield* again.thread.get({ threadId })
      expect(view.thread.restore).toMatchObject({ status: "done", toRunOrdinal: 1 })
      const files = filesOf(repo, "utf8")
      const expected: Record<string, string> = { ...beforeRestore, "ws/src/f1.txt": "file 1\n" }
      delete expected["ws/b.txt"]
      delete expected["ws/c.txt"]
      delete expected["ws/handmade.txt"]
      expect(files).toEqual(expected)

      // The retried command answers with what the restore did, and the undo gives back every byte.
      const retried = yield* again.thread.rollback(rollback)
      expect(retried.restore).toMatchObject({
        reverted: ["src/f1.txt"],
        deleted: ["b.txt", "c.txt", "handmade.txt"],
        created: [],
        dryRun: false
      })
      expect(backups()).toEqual([retried.restore!.backupRef])
      execFileSync("sh", ["-c", retried.restore!.undo!], { cwd: ws, encoding: "utf8" })
      expect(filesOf(repo, "utf8")).toEqual(beforeRestore)

      // And the thread takes runs again.
      const run = yield* again.run.start({ threadId, provider: alpha, message: "[[write:d.txt:four]]", wait: true })
      expect(run.status).toBe("completed")
    })
  )

describe("a daemon killed mid-restore", () => {
  it.live(
    "as the restore starts: finished at the next start, nothing lost",
    () => killedMidRestore("as the restore starts"),
    120_000
  )
  it.live(
    "after the backup is saved: finished at the next start, nothing lost",
    () => killedMidRestore("after the backup is saved"),
    120_000
  )
})
