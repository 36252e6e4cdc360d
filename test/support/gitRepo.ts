/**
 * Test support for suites that work in real git repositories: git run with a closed
 * environment, every file of a work tree with its bytes, and what of a user's
 * repository must never change.
 */
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"

/** The environment of a test's own git commands (never the user's configuration). */
export const gitEnv = (home: string): Record<string, string> => ({
  PATH: process.env["PATH"] ?? "/usr/bin:/bin",
  HOME: home,
  GIT_AUTHOR_NAME: "t",
  GIT_AUTHOR_EMAIL: "t@t",
  GIT_COMMITTER_NAME: "t",
  GIT_COMMITTER_EMAIL: "t@t"
})

/** Runs git in `cwd` and gives its standard output. */
export const git = (cwd: string, ...args: Array<string>): string =>
  execFileSync("git", args, { cwd, encoding: "utf8", env: gitEnv(cwd) })

/** Every file under `dir` but `.git`, by path relative to it: its bytes as base64, or as text with `"utf8"`. */
export const filesOf = (dir: string, encoding: "base64" | "utf8" = "base64"): Record<string, string> => {
  const out: Record<string, string> = {}
  const walk = (rel: string) => {
    for (const entry of Fs.readdirSync(Path.join(dir, rel), { withFileTypes: true })) {
      const path = rel === "" ? entry.name : `${rel}/${entry.name}`
      if (path === ".git") continue
      if (entry.isDirectory()) walk(path)
      else out[path] = Fs.readFileSync(Path.join(dir, path)).toString(encoding)
    }
  }
  walk("")
  return out
}

/** What of the user's repository a checkpoint or a restore must never change. */
export const repoState = (cwd: string) => ({
  head: git(cwd, "rev-parse", "HEAD"),
  branches: git(cwd, "branch", "-a", "-v"),
  stash: git(cwd, "stash", "list"),
  index: Fs.readFileSync(Path.join(cwd, ".git", "index")).toString("base64")
})
