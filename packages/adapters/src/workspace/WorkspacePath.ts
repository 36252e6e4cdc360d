/**
 * Where a provider may touch files: inside its workspace, judged on real paths. A
 * path the provider names is refused when it is absolute, when it climbs out with
 * `..` (a name that merely starts with dots, like `..foo`, is fine), or when any
 * existing part of it is a symlink that leads out of the workspace. Every adapter
 * that writes files for a turn goes through `containedPath`.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"

export type Contained =
  | { readonly _tag: "Inside"; readonly target: string; readonly relative: string }
  | { readonly _tag: "Refused"; readonly problem: string }

const inside = (root: string, path: string): boolean => {
  const rel = Path.relative(root, path)
  return rel === "" || (!rel.startsWith(`..${Path.sep}`) && rel !== ".." && !Path.isAbsolute(rel))
}

/** The deepest part of `target` that exists, resolved through its symlinks. */
const realExistingPart = (target: string): string => {
  let probe = target
  for (;;) {
    try {
      return Fs.realpathSync(probe)
    } catch {
      const parent = Path.dirname(probe)
      if (parent === probe) return probe
      probe = parent
    }
  }
}

/** Resolves `relative` against the real `workspace`, or says why it may not be touched. */
export const containedPath = (workspace: string, relative: string): Contained => {
  let root: string
  try {
    root = Fs.realpathSync(workspace)
  } catch {
    return { _tag: "Refused", problem: `the workspace ${workspace} does not exist` }
  }
  if (Path.isAbsolute(relative)) return { _tag: "Refused", problem: "absolute paths are refused" }
  const target = Path.resolve(root, relative)
  if (target === root || !inside(root, target)) return { _tag: "Refused", problem: "the path leaves the workspace" }
  // A symlink on the way (or the file itself) may point anywhere: judge where it leads.
  if (!inside(root, realExistingPart(target))) {
    return { _tag: "Refused", problem: "the path leads out of the workspace through a symlink" }
  }
  return { _tag: "Inside", target, relative: Path.relative(root, target).split(Path.sep).join("/") }
}
