/**
 * What `skein rollback --restore-files` prints from the restore outcome, before (a dry
 * run: what would change) and after (what changed, what could not be restored, the
 * backup and how to undo). The runtime fills the outcome; these are the pure views.
 */
import type { RestoreOutcome, RollbackView } from "@skein/domain"
import { describe, expect, it } from "vitest"
import { restoreLines, rollbackLines } from "../../packages/server/src/Presentation.js"

const outcome = (over: Partial<RestoreOutcome>): RestoreOutcome => ({
  toRunOrdinal: 2,
  checkpointCommit: "0123456789abcdef0123456789abcdef01234567",
  workspace: "/home/me/app",
  dryRun: false,
  backupRef: "refs/skein/threads/thr_1/backups/1",
  backupCommit: "fedcba9876543210fedcba9876543210fedcba98",
  reverted: ["src/a.ts", "README.md"],
  deleted: ["tmp/new.txt"],
  created: [],
  omitted: [{ path: "data/big.bin", bytes: 12 * 1024 * 1024 }],
  submodules: ["vendor/lib"],
  undo: "git -C /home/me/app restore --source=refs/skein/threads/thr_1/backups/1 --worktree -- .",
  ...over
})

const run = (ordinal: number, status: string) => ({ ordinal, status }) as unknown as RollbackView["runs"][number]

describe("the restore outcome as printed", () => {
  it("after: files reverted, deleted and created, what was not restored, the backup and the undo", () => {
    expect(restoreLines(outcome({}))).toEqual([
      "restored /home/me/app to run 2 (checkpoint 0123456789ab)",
      "  reverted 2: src/a.ts, README.md",
      "  deleted 1: tmp/new.txt",
      "  created 0: none",
      "  not restored (over the checkpoint's size limit): data/big.bin (12.0 MiB)",
      "  not restored (inside submodules): vendor/lib",
      "  the work tree before the restore is saved as refs/skein/threads/thr_1/backups/1 (fedcba987654)",
      "  to undo: git -C /home/me/app restore --source=refs/skein/threads/thr_1/backups/1 --worktree -- ."
    ])
  })

  it("before: a dry run says what would change and that nothing did", () => {
    const dry = outcome({ dryRun: true, backupRef: null, backupCommit: null, undo: null, omitted: [], submodules: [] })
    expect(restoreLines(dry)).toEqual([
      "dry run: restoring /home/me/app to run 2 (checkpoint 0123456789ab) would",
      "  revert 2: src/a.ts, README.md",
      "  delete 1: tmp/new.txt",
      "  create 0: none",
      "nothing was changed"
    ])
    const view = {
      thread: { id: "thr_1" },
      runs: [run(1, "completed"), run(2, "completed"), run(3, "completed"), run(4, "failed")],
      restore: dry
    } as unknown as RollbackView
    expect(rollbackLines(view, 2)[0]).toBe("dry run: rolling thread thr_1 back to run 2 would roll back runs 3-4")
  })

  it("a rollback without a restore names the runs it rolled back", () => {
    const view = {
      thread: { id: "thr_1" },
      runs: [run(1, "completed"), run(2, "rolled_back")]
    } as unknown as RollbackView
    expect(rollbackLines(view, 1)).toEqual(["thread thr_1 rolled back to run 1: run 2 rolled back"])
    expect(rollbackLines({ ...view, runs: [run(1, "completed")] } as RollbackView, 1)).toEqual([
      "thread thr_1 rolled back to run 1: none rolled back"
    ])
  })
})
