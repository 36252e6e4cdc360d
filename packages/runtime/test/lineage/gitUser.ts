/**
 * git as a test's user runs it (no system or global config, never refreshing the index
 * on reads), and temporary directories removed after the file's tests.
 */
import { afterAll } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

const dirs: Array<string> = []

/** A fresh directory (its real path), removed after the tests of the file that made it. */
export const tempDir = (prefix = "skein-git-test-") => {
  const dir = Fs.realpathSync(Fs.mkdtempSync(Path.join(Os.tmpdir(), prefix)))
  dirs.push(dir)
  return dir
}
afterAll(() => dirs.splice(0).forEach((dir) => Fs.rmSync(dir, { recursive: true, force: true })))

export const env = (home: string) => ({
  PATH: process.env.PATH ?? "",
  HOME: home,
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_OPTIONAL_LOCKS: "0",
  GIT_AUTHOR_NAME: "Test",
  GIT_AUTHOR_EMAIL: "test@example.com",
  GIT_COMMITTER_NAME: "Test",
  GIT_COMMITTER_EMAIL: "test@example.com"
})

/** Runs git in `cwd` and gives its output; a failure throws. */
export const sh = (cwd: string, ...args: Array<string>): string =>
  execFileSync("git", args, { cwd, env: env(cwd), encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })

/** Writes `content` at `path` under `root`, making its directories. */
export const write = (root: string, path: string, content: string | Uint8Array) => {
  Fs.mkdirSync(Path.dirname(Path.join(root, path)), { recursive: true })
  Fs.writeFileSync(Path.join(root, path), content)
}

export const remove = (root: string, path: string) => Fs.rmSync(Path.join(root, path), { recursive: true })

/** Every file under `root` except `.git`, path to its bytes in `encoding` (for readable diffs). */
export const filesIn = (root: string, encoding: BufferEncoding, dir = ""): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const entry of Fs.readdirSync(Path.join(root, dir), { withFileTypes: true })) {
    const rel = dir === "" ? entry.name : `${dir}/${entry.name}`
    if (rel === ".git") continue
    if (entry.isDirectory()) Object.assign(out, filesIn(root, encoding, rel))
    else out[rel] = Fs.readFileSync(Path.join(root, rel)).toString(encoding)
  }
  return out
}
