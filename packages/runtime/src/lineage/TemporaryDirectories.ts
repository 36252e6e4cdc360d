/**
 * The temporary directories git checkpoints use (a temporary index, a writer's commit
 * texts) carry the owning process's id in their names: `skein-git-<pid>-XXXXXX` and
 * `skein-git-writer-<pid>-XXXXXX`. A process killed outright leaves its directories
 * behind; `sweep` removes those whose process is gone (and the older unnamed form,
 * `skein-git-XXXXXX`, once it is an hour old), never a live process's.
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

/** A new directory of this process under the temp dir, e.g. `skein-git-4242-a1B2c3`. */
export const make = (kind: "skein-git" | "skein-git-writer"): string =>
  Fs.mkdtempSync(Path.join(Os.tmpdir(), `${kind}-${process.pid}-`))

const owned = /^skein-git-(?:writer-)?(\d+)-[A-Za-z0-9]{6}$/
const unnamed = /^skein-git-(?:writer-)?[A-Za-z0-9]{6}$/
const UNNAMED_AGE_MS = 60 * 60 * 1000

/** Whether a process with this id exists (one we may not signal exists too). */
export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** Which of these directory names (with their modification times) may go: a pure decision. */
export const doomed = (
  entries: ReadonlyArray<{ readonly name: string; readonly modifiedMs: number }>,
  now: number,
  isAlive: (pid: number) => boolean
): Array<string> =>
  entries
    .filter(({ modifiedMs, name }) => {
      const pid = owned.exec(name)?.[1]
      if (pid !== undefined) return Number(pid) !== process.pid && !isAlive(Number(pid))
      return unnamed.test(name) && now - modifiedMs > UNNAMED_AGE_MS
    })
    .map(({ name }) => name)

/** Removes the directories of processes that are gone; gives the names removed. Never fails. */
export const sweep = (dir: string = Os.tmpdir()): Array<string> => {
  let names: Array<string>
  try {
    names = Fs.readdirSync(dir).filter((name) => name.startsWith("skein-git-"))
  } catch {
    return []
  }
  const entries = names.flatMap((name) => {
    const stat = Fs.lstatSync(Path.join(dir, name), { throwIfNoEntry: false })
    return stat?.isDirectory() ? [{ name, modifiedMs: stat.mtimeMs }] : []
  })
  const removed: Array<string> = []
  for (const name of doomed(entries, Date.now(), alive)) {
    try {
      Fs.rmSync(Path.join(dir, name), { recursive: true, force: true })
      removed.push(name)
    } catch {
      // Another sweeper or a permission: left for the next start.
    }
  }
  return removed
}
