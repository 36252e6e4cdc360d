/**
 * Vitest's global set-up: one temporary directory for the whole test run. Every test's
 * temporary directories go inside it (`os.tmpdir()` follows TMPDIR, and the workers,
 * forked after this runs, inherit it), and it is removed when the run ends, whatever
 * the tests did: a failed test, or one that keeps its directory for a child process,
 * leaves nothing behind in the machine's /tmp. (Before, each `npm test` left some 50.)
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

export default function setup(): () => void {
  const root = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skein-tests-"))
  const previous = process.env.TMPDIR
  process.env.TMPDIR = root
  return () => {
    if (previous === undefined) delete process.env.TMPDIR
    else process.env.TMPDIR = previous
    Fs.rmSync(root, { recursive: true, force: true, maxRetries: 3 })
  }
}
