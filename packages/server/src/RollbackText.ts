/**
 * The text of `skein rollback`: which runs left the conversation (or would), and
 * what a file restore did (or would do). Pure.
 */
import type { RestoreOutcome, RollbackView, Run } from "@skein/domain"

const fileList = (files: ReadonlyArray<string>): string => (files.length === 0 ? "none" : files.join(", "))
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`

/**
 * What a file restore did (or, for a dry run, would do): files reverted, deleted and
 * created, files it could not restore, the backup of the work tree and how to undo.
 */
export const restoreLines = (r: RestoreOutcome): Array<string> => {
  const commit = r.checkpointCommit.slice(0, 12)
  const notRestored = [
    ...(r.omitted.length === 0
      ? []
      : [
          `not restored (over the checkpoint's size limit): ${r.omitted.map((o) => `${o.path} (${mib(o.bytes)})`).join(", ")}`
        ]),
    ...(r.submodules.length === 0 ? [] : [`not restored (inside submodules): ${r.submodules.join(", ")}`])
  ]
  if (r.dryRun) {
    return [
      `dry run: restoring ${r.workspace} to run ${r.toRunOrdinal} (checkpoint ${commit}) would`,
      `  revert ${r.reverted.length}: ${fileList(r.reverted)}`,
      `  delete ${r.deleted.length}: ${fileList(r.deleted)}`,
      `  create ${r.created.length}: ${fileList(r.created)}`,
      ...notRestored.map((l) => `  ${l}`),
      "nothing was changed"
    ]
  }
  return [
    `restored ${r.workspace} to run ${r.toRunOrdinal} (checkpoint ${commit})`,
    `  reverted ${r.reverted.length}: ${fileList(r.reverted)}`,
    `  deleted ${r.deleted.length}: ${fileList(r.deleted)}`,
    `  created ${r.created.length}: ${fileList(r.created)}`,
    ...notRestored.map((l) => `  ${l}`),
    ...(r.backupRef === null
      ? []
      : [
          `  the work tree before the restore is saved as ${r.backupRef}${r.backupCommit === null ? "" : ` (${r.backupCommit.slice(0, 12)})`}`
        ]),
    ...(r.undo === null ? [] : [`  to undo: ${r.undo}`])
  ]
}

const ordinals = (runs: ReadonlyArray<Run>): string =>
  runs.length === 0
    ? "none"
    : runs.length === 1
      ? `run ${runs[0]!.ordinal}`
      : `runs ${runs[0]!.ordinal}-${runs[runs.length - 1]!.ordinal}`

/** What `skein rollback` prints: which runs left the conversation (or would), then the file restore, if any. */
export const rollbackLines = (view: RollbackView, toRunOrdinal: number): Array<string> => {
  const id = view.thread.id
  const dryRun = view.restore?.dryRun === true
  const later = view.runs.filter((r) => r.ordinal > toRunOrdinal)
  const head = dryRun
    ? `dry run: rolling thread ${id} back to run ${toRunOrdinal} would roll back ${ordinals(later.filter((r) => r.status !== "rolled_back"))}`
    : `thread ${id} rolled back to run ${toRunOrdinal}: ${ordinals(later.filter((r) => r.status === "rolled_back"))} rolled back`
  return [head, ...(view.restore === undefined ? [] : restoreLines(view.restore))]
}
