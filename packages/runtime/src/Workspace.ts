/**
 * A thread's workspace, checked before anything is written: an absolute path to an
 * existing directory, stored as its real path (symlinks resolved), neither the
 * filesystem root nor the home directory itself, and, when the host configured
 * workspace roots, inside one of them (judged on real paths too).
 */
import { InvalidWorkspace } from "@skein/domain"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

const realpath = (path: string): string | undefined => {
  try {
    return Fs.realpathSync(path)
  } catch {
    return undefined
  }
}

const within = (root: string, path: string): boolean => {
  const rel = Path.relative(root, path)
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${Path.sep}`) && !Path.isAbsolute(rel))
}

/** The real path of an acceptable workspace, or why it is refused. */
export const resolveWorkspace = (
  workspace: string,
  roots: ReadonlyArray<string> | null
): Effect.Effect<string, InvalidWorkspace> =>
  Effect.suspend(() => {
    // An embedding host in plain JavaScript may pass anything: refused, not a defect.
    if (typeof workspace !== "string") {
      return Effect.fail(new InvalidWorkspace({ workspace: String(workspace), problem: "it is not a path" }))
    }
    const refuse = (problem: string) => Effect.fail(new InvalidWorkspace({ workspace, problem }))
    if (workspace.trim() === "" || workspace.includes("\u0000")) return refuse("it is not a path")
    if (!Path.isAbsolute(workspace)) {
      return refuse("it is relative, and would depend on the directory the daemon was started from")
    }
    const real = realpath(workspace)
    if (real === undefined) return refuse("it does not exist")
    if (!Fs.statSync(real).isDirectory()) return refuse("it is not a directory")
    if (Path.dirname(real) === real) return refuse("the filesystem root would let an agent act on every file")
    const realRoots = (roots ?? []).flatMap((root) => {
      const r = realpath(root)
      return r === undefined ? [] : [r]
    })
    if (roots !== null) {
      if (!realRoots.some((root) => within(root, real))) {
        return refuse(
          `it is outside the allowed workspace roots (${roots.join(", ") || "none configured"}); ask the host to add a root, or choose a directory inside one`
        )
      }
    } else if (real === realpath(Os.homedir())) {
      return refuse("the home directory itself is too wide a workspace; choose a project directory inside it")
    }
    return Effect.succeed(real)
  })
