/**
 * The baseline checkout of the side-by-side bench: revision REV built in a git worktree
 * under the system's temporary directory (outside any tracked tree and any node_modules,
 * where TypeScript would not build it), made by scripts/ab-baseline.sh the first time
 * and reused while its stamp says it was built at REV.
 */
import { execFileSync, spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

/** The repository's root: the nearest directory up from here with scripts/ab-baseline.sh. */
const repoRoot = (): string => {
  let dir = Path.dirname(fileURLToPath(import.meta.url))
  while (!Fs.existsSync(Path.join(dir, "scripts", "ab-baseline.sh"))) {
    const up = Path.dirname(dir)
    if (up === dir) throw new Error("cannot find the repository root (scripts/ab-baseline.sh) from test/bench")
    dir = up
  }
  return dir
}

/** The directory of a built checkout of `rev` (a commit-ish), building it first if it is not there. */
export const ensureBaseline = (rev: string): { readonly dir: string; readonly commit: string } => {
  const root = repoRoot()
  const commit = execFileSync("git", ["rev-parse", "--verify", `${rev}^{commit}`], {
    cwd: root,
    encoding: "utf8"
  }).trim()
  const dir = Path.join(Os.tmpdir(), `skein-baseline-${commit.slice(0, 12)}`)
  const built = spawnSync("bash", [Path.join(root, "scripts", "ab-baseline.sh"), commit, dir], {
    cwd: root,
    stdio: "inherit",
    timeout: 20 * 60_000
  })
  if (built.status !== 0) {
    throw new Error(
      `building the baseline ${commit} in ${dir} failed (${built.signal ?? `exit ${built.status}`}): ` +
        `see the output above; remove it with \`git worktree remove --force ${dir}\` and run again`
    )
  }
  return { dir, commit }
}
