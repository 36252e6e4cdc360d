#!/usr/bin/env node
// Installs the agent CLIs the end-to-end tests drive (@openai/codex and
// @anthropic-ai/claude-code, pinned in test/agents/binaries/package-lock.json) into
// test/agents/binaries/node_modules, once: a stamp records the lockfile it installed,
// and a later run with the same lockfile does nothing. The root `npm ci` never
// fetches them (about 360 MB); `npm test` runs this first.
//
// Install scripts stay off (--ignore-scripts): Claude Code's postinstall only copies
// its platform binary over a placeholder, and the tests run the platform binary itself.
import { spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const dir = join(dirname(fileURLToPath(import.meta.url)), "..", "test", "agents", "binaries")
const lock = readFileSync(join(dir, "package-lock.json"))
const digest = createHash("sha256").update(lock).digest("hex")
const stamp = join(dir, "node_modules", ".skein-installed")

if (existsSync(stamp) && readFileSync(stamp, "utf8").trim() === digest) process.exit(0)

console.log("installing the agent binaries for the end-to-end tests (once; about 360 MB)…")
const started = Date.now()
const npm = process.platform === "win32" ? "npm.cmd" : "npm"
const result = spawnSync(
  npm,
  ["ci", "--prefix", dir, "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
  { stdio: "inherit" }
)
if (result.status !== 0) {
  console.error(`installing the agent binaries failed (${result.signal ?? `exit ${result.status}`})`)
  process.exit(result.status ?? 1)
}
writeFileSync(stamp, `${digest}\n`)
console.log(`agent binaries installed in ${((Date.now() - started) / 1000).toFixed(0)} s`)
