/**
 * The `skein` CLI as a person lives in it, through the built executable: help that
 * helps (piped and on a terminal), a human command for every capability, `send`
 * showing what the run does, `show` and `follow` telling the truth, and errors as one
 * readable line (the typed JSON with --json).
 */
import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { DEFAULT_LEASE_MS } from "@skein/runtime"
import { describe, expect, it } from "vitest"
import { commandDocs, documentedOptions } from "../../packages/server/src/Help.js"
import { runSkeinOnTerminal } from "./cliTerminal.js"
import { childEnv, runSkein, tempDir, trackDaemons } from "./support.js"

const start = trackDaemons()
const ESC = "\u001b"

/** A daemon of its own, and a runner that fails the test on a non-zero exit. */
const session = async () => {
  const home = tempDir("skein-cli-")
  const d = await start(["--port", "0"], childEnv(home))
  const env = childEnv(home, { SKEIN_URL: d.url })
  const ok = async (...args: Array<string>) => {
    const result = await runSkein(args, env)
    if (result.code !== 0) throw new Error(`skein ${args.join(" ")} failed (${result.code}): ${result.stderr}`)
    return result.stdout
  }
  return { home, env, ok }
}

describe("skein help", () => {
  it("describes every command, positional and option in Skein's words, with an example; plain when piped", async () => {
    const env = childEnv(tempDir("skein-help-"))
    const top = await runSkein(["--help"], env)
    expect(top.code).toBe(0)
    expect(top.stdout).not.toContain(ESC)
    expect(top.stdout).toContain("Usage: skein COMMAND [ARGS] [OPTIONS]")
    for (const doc of commandDocs.filter((d) => d.path !== "thread" && d.path !== "thread list" && d.path !== "help")) {
      expect(top.stdout).toMatch(new RegExp(`^  ${doc.path.replace("-", "\\-")} +\\S`, "m"))
    }
    expect((await runSkein([], env)).stdout).toBe(top.stdout)

    for (const doc of commandDocs) {
      const result = await runSkein([...doc.path.split(" "), "--help"], env)
      expect(result.code, doc.path).toBe(0)
      const text = result.stdout
      expect(text).toContain(`Usage: ${doc.usage}\n`)
      expect(text).toMatch(/\nExamples?:\n {2}(T=\$\()?skein /)
      for (const [name, description] of [...(doc.args ?? []), ...documentedOptions(doc)]) {
        expect(text).toContain(`\n  ${name}\n      ${description.split(" ").slice(0, 4).join(" ")}`)
      }
      for (const generic of ["A user-defined piece of text", "A true or false value", "--wizard", ESC]) {
        expect(text).not.toContain(generic)
      }
    }
    const help = await runSkein(["help", "thread", "new"], env)
    expect(help.stdout).toContain("Usage: skein thread new [--workspace DIR] [--title TEXT]\n")
  }, 60_000)

  it("has no wizard mode", async () => {
    const result = await runSkein(["send", "--wizard"], childEnv(tempDir("skein-help-")))
    expect(result.code).toBe(2)
    expect(result.stdout).toBe("")
    expect(result.stderr).toBe(
      "skein: there is no wizard mode: skein --help lists the commands, skein COMMAND --help explains one.\n"
    )
  })

  it("documents exactly the options each command takes", async () => {
    const { CliConfig, Command, HelpDoc } = await import("@effect/cli")
    const { skeinCommand } = await import("../../packages/server/src/Cli.js")
    const text = HelpDoc.toAnsiText(Command.getHelp(skeinCommand, CliConfig.defaultConfig)).replace(
      /\u001b\[[0-9;]*m/g,
      ""
    )
    // "  - send [--url text] … <THREAD> …  description": each command with what it takes
    const taken = new Map<string, Array<string>>()
    for (const line of text.split("\n")) {
      const match = /^\s+- ([a-z-]+(?: [a-z-]+)?)( \[|\s+--| <|\s*$)(.*)$/.exec(line)
      if (match === null) continue
      taken.set(
        match[1]!,
        [...`${match[2]}${match[3]}`.matchAll(/--[a-z-]+/g)].map((m) => m[0])
      )
    }
    expect([...taken.keys()].sort()).toEqual(
      commandDocs
        .map((d) => d.path)
        .filter((p) => p !== "help")
        .sort()
    )
    for (const doc of commandDocs.filter((d) => d.path !== "thread" && d.path !== "help")) {
      const documented = documentedOptions(doc).map(([flags]) => flags.split(" ")[0]!)
      expect([...documented].sort(), doc.path).toEqual([...new Set(taken.get(doc.path) ?? [])].sort())
    }
    // A default the help states is the one the runtime applies.
    const lease = documentedOptions(commandDocs.find((d) => d.path === "daemon")!).find(([f]) => f === "--lease-ms N")
    expect(lease?.[1]).toContain(`(default ${DEFAULT_LEASE_MS})`)
  })

  it("colours only on a terminal, and never with NO_COLOR", async () => {
    const env = childEnv(tempDir("skein-help-"))
    const coloured = await runSkeinOnTerminal(["send", "--help"], env)
    expect(coloured.code).toBe(0)
    expect(coloured.stdout).toContain(`${ESC}[1mUsage:${ESC}[22m skein send THREAD PROVIDER MESSAGE`)
    const noColour = await runSkeinOnTerminal(["send", "--help"], { ...env, NO_COLOR: "1" })
    expect(noColour.stdout).toContain("Usage: skein send THREAD PROVIDER MESSAGE")
    expect(noColour.stdout).not.toContain(ESC)
  })
})

describe("skein send", () => {
  it("piped: prints what the run does as plain lines, then the summary", async () => {
    const { env, ok, home } = await session()
    const workspace = Path.join(home, "ws")
    Fs.mkdirSync(workspace)
    const thread = (await ok("thread", "new", "--workspace", workspace, "--title", "send")).trim()
    const result = await runSkein(
      [
        "send",
        thread,
        "alpha",
        "May I? [[ask:delete the build dir?]] [[cmd:npm test:3]] [[write:notes.txt:hi]] [[write:../out.txt:no]] [[plan:read;fix]] [[subagent:beta:look around]]"
      ],
      env
    )
    expect(result.code).toBe(0)
    expect(result.stderr).toBe("")
    expect(result.stdout).not.toContain(ESC)
    const lines = result.stdout.trimEnd().split("\n")
    expect(lines).toHaveLength(11)
    expect(lines[0]).toMatch(/^run 1 on alpha \(run_\w+\): context none$/)
    const approval = /^approval (apr_\w+) open: delete the build dir\?$/.exec(lines[1]!)
    expect(approval).not.toBeNull()
    expect(lines[2]).toBe(`  answer it: skein approve ${thread} ${approval![1]} accept|decline|cancel`)
    expect(lines[3]).toBe("$ npm test  exit 3")
    expect(lines[4]).toBe("added notes.txt: added notes.txt (2 bytes)")
    expect(lines[5]).toBe("refused [write_rejected]: cannot write ../out.txt: the path leaves the workspace")
    expect(lines[6]).toBe("plan [ ] read  [ ] fix")
    const child = /^subagent (thr_\w+) started on beta: look around$/.exec(lines[7]!)
    expect(child).not.toBeNull()
    expect(lines[8]).toBe(`  follow it: skein follow ${child![1]}`)
    expect(lines[9]).toBe("ok")
    expect(lines[10]).toMatch(
      /^run 1 completed in \d+ ms · run_\w+ · alpha on pth_\w+ · context none · tokens \d+ in, \d+ out$/
    )
    expect(Fs.readFileSync(Path.join(workspace, "notes.txt"), "utf8")).toBe("hi")

    // the next provider's run: its context and the handoff that carried it
    const next = await ok("send", thread, "beta", "carry on")
    expect(next).toMatch(/^run 2 on beta \(run_\w+\): context portable via handoff (hof_\w+)\n/)
    const handoff = /via handoff (hof_\w+)/.exec(next)![1]!
    expect(next).toContain(`· context portable via handoff ${handoff} ·`)
  }, 60_000)

  it("on a terminal: a progress line while the agent works, colour, and the summary", async () => {
    const { env, ok } = await session()
    const thread = (await ok("thread", "new")).trim()
    const result = await runSkeinOnTerminal(["send", thread, "alpha", "slowly [[sleep:1200]]"], env)
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/⠋.* run 1 on alpha: (working|waiting for the run) \d\.\d s/)
    expect(result.stdout).toContain(`run 1 ${ESC}[32mcompleted${ESC}[39m in 1.`)
    // the progress line is cleared before the summary, which ends the output
    expect(result.stdout).toMatch(/\u001b\[2Krun 1 \u001b\[32mcompleted\u001b\[39m in 1\.\d s · run_\w+ .*\n$/)
  }, 30_000)

  it("exits 1 with the run's failure in one line", async () => {
    const { env, ok } = await session()
    const thread = (await ok("thread", "new")).trim()
    const result = await runSkein(["send", thread, "alpha", "[[fail]]"], env)
    expect(result.code).toBe(1)
    expect(result.stdout).toMatch(/\nrun 1 failed in \d+ ms · run_\w+ · alpha on /)
    expect(result.stderr).toMatch(/^skein: run 1 failed: .+\n$/)
  }, 30_000)
})

describe("skein errors", () => {
  it("are one readable line; --json gives the typed error", async () => {
    const { env, ok } = await session()
    const thread = (await ok("thread", "new")).trim()
    const empty = await runSkein(["send", thread, "alpha", ""], env)
    expect(empty.code).toBe(1)
    expect(empty.stdout).toBe("")
    expect(empty.stderr).toBe("skein: Invalid input: MESSAGE: message must not be empty\n")
    const emptyJson = await runSkein(["send", thread, "alpha", "", "--json"], env)
    expect(JSON.parse(emptyJson.stderr)).toEqual({
      _tag: "InvalidInput",
      detail: "MESSAGE: message must not be empty",
      message: "Invalid input: MESSAGE: message must not be empty"
    })

    const negative = await runSkein(["rollback", thread, "-1"], env)
    expect(negative.code).toBe(1)
    expect(negative.stderr).toBe(
      'skein: Invalid input: RUN: "-1" is neither a run ordinal (0, 1, 2 … as skein show prints them) nor a run id (run_…)\n'
    )
    const missing = await runSkein(["show", "thr_nope"], env)
    expect(missing.stderr).toBe(
      "skein: No thread with id thr_nope. List threads with skein threads (the RPC thread.list).\n"
    )

    // a second answer to the same approval says what the first one was
    await ok("send", thread, "alpha", "[[ask:ship it?]]")
    expect((await ok("approve", thread, "accept")).trim()).toMatch(/^approval apr_\w+ answered accept: ship it\?$/)
    const approvalId = /apr_\w+/.exec(await ok("show", thread))![0]
    const again = await runSkein(["approve", thread, approvalId, "decline"], env)
    expect(again.code).toBe(1)
    expect(again.stderr).toBe(`skein: Approval ${approvalId} on thread ${thread} was already answered: accept.\n`)
    const againJson = await runSkein(["approve", thread, approvalId, "decline", "--json"], env)
    expect(JSON.parse(againJson.stderr)).toMatchObject({ _tag: "ApprovalNotFound", approvalId, answered: "accept" })
    const none = await runSkein(["approve", thread, "accept"], env)
    expect(none.stderr).toBe(`skein: Invalid input: thread ${thread} has no open approval\n`)
  }, 60_000)
})

describe("every capability a command", () => {
  it("threads, workspace, interrupt, subagent, handoff, providers, fork and rollback by ordinal or id", async () => {
    const { env, ok, home } = await session()
    const workspace = Path.join(home, "project")
    Fs.mkdirSync(workspace)
    const a = (await ok("thread", "new", "--workspace", workspace, "--title", "first")).trim()
    const b = (await ok("thread", "new", "--title", "second")).trim()
    // a run on the older thread makes it the most recently active
    await ok("send", a, "alpha", "hello")
    const listed = (await ok("threads")).trimEnd().split("\n")
    expect(listed).toHaveLength(2)
    expect(listed[0]).toMatch(
      new RegExp(`^${a}  \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d  "first"  root  ${workspace}$`)
    )
    expect(listed[1]).toMatch(new RegExp(`^${b}  .*  "second"  root$`))
    const [aJson] = JSON.parse(await ok("thread", "list", "--json", "--limit", "1")) as Array<{
      id: string
      createdAt: string
      updatedAt: string
    }>
    expect(aJson!.id).toBe(a)
    expect(aJson!.updatedAt > aJson!.createdAt).toBe(true)
    const shownA = JSON.parse(await ok("show", a, "--json")) as { thread: { updatedAt: string } }
    expect(shownA.thread.updatedAt).toBe(aJson!.updatedAt)

    // subagent: the child's id; listed under its parent
    const child = (await ok("subagent", a, "beta", "look around")).trim()
    expect(child).toMatch(/^thr_\w+$/)
    expect((await ok("threads", "--parent", a)).trim()).toMatch(
      new RegExp(`^${child}  .*  "look around"  subagent of ${a} \\(root ${a}\\)  ${workspace}$`)
    )
    expect((await ok("threads", "--root", b)).trim().split("\n")).toHaveLength(1)

    // providers
    expect((await ok("providers")).trimEnd().split("\n")).toEqual([
      expect.stringMatching(/^alpha {2}scripted {2}model default {2}resume, fork at_turn, rollback native, /),
      expect.stringMatching(/^beta {2}scripted {2}model default {2}resume, fork none, rollback none, /)
    ])

    // handoff: the record, then its text
    const sent = await ok("send", a, "beta", "your turn")
    const handoffId = /via handoff (hof_\w+)/.exec(sent)![1]!
    const handoff = (await ok("handoff", handoffId)).split("\n")
    expect(handoff[0]).toBe(`handoff ${handoffId}  portable_context  full_thread_summary  ready`)
    expect(handoff[1]).toMatch(
      new RegExp(`^thread ${a}, transfer xfr_\\w+ \\(provider_handoff from ${a}\\), for run run_\\w+$`)
    )
    expect(handoff[2]).toMatch(/^covers runs 1; from pth_\w+ to pth_\w+$/)
    expect(handoff).toContain("# Context handoff (full_thread_summary): run 1")

    // fork by ordinal and by id, at the same run
    const runs = (JSON.parse(await ok("show", a, "--json")) as { runs: Array<{ id: string }> }).runs
    const byOrdinal = (await ok("fork", a, "--run", "1", "--json")).trim()
    const byId = (await ok("fork", a, "--run", runs[0]!.id, "--json")).trim()
    for (const fork of [byOrdinal, byId]) {
      expect(JSON.parse(fork)).toMatchObject({ workspace, lineage: { parentThreadId: a } })
    }
    const noRun = await runSkein(["fork", a, "--run", "9"], env)
    expect(noRun.stderr).toBe(`skein: Invalid input: --run: thread ${a} has no run 9 (it has 2)\n`)

    // interrupt a run in flight
    await ok("call", "run.start", JSON.stringify({ threadId: b, provider: "alpha", message: "[[sleep:10000]]" }))
    expect((await ok("interrupt", b)).trim()).toMatch(/^run 1 \(run_\w+\) on alpha: (running|interrupted)$/)
    const interrupted = await runSkein(["follow", b, "--limit", "40"], env, 10_000)
    expect(interrupted.stdout).toMatch(/ run 1 interrupted on alpha \(run_\w+\)/)

    // rollback by id
    expect((await ok("rollback", a, runs[0]!.id)).trim()).toBe(`thread ${a} rolled back to run 1: run 2 rolled back`)
    const dry = await runSkein(["rollback", a, "1", "--dry-run"], env)
    expect(dry.stderr).toBe("skein: Invalid input: --dry-run goes with --restore-files (it previews a file restore)\n")
  }, 90_000)
})

describe("show and follow", () => {
  it("show reads the conversation with a true context column; follow describes every event with its time", async () => {
    const { env, ok, home } = await session()
    const workspace = Path.join(home, "ws")
    Fs.mkdirSync(workspace)
    spawnSync("git", ["init", "--quiet", workspace])
    const thread = (await ok("thread", "new", "--workspace", workspace, "--title", "talk")).trim()
    await ok("send", thread, "alpha", "first line\nsecond line [[subagent:beta:count files]] [[cmd:ls:0]]")
    const fork = (await ok("fork", thread, "--run", "1", "--title", "side")).trim()
    await ok("send", fork, "beta", "on the side [[decide:use sqlite]]")
    await ok("merge-back", fork)
    await ok("send", thread, "beta", "and now")
    const shown = (await ok("show", thread)).split("\n")
    expect(shown[0]).toBe(`thread ${thread}  "talk"  root`)
    expect(shown[1]).toBe(`workspace ${workspace}`)
    expect(shown[2]).toMatch(/^run 1 {2}alpha A1 {2}completed {2}context none {2}tokens/)
    expect(shown[3]).toBe("    you: first line")
    expect(shown[4]).toBe("         second line [[subagent:beta:count files]] [[cmd:ls:0]]")
    expect(shown).toContain("    $ ls  exit 0")
    expect(shown.some((l) => /^ {4}subagent thr_\w+ started on beta: count files$/.test(l))).toBe(true)
    expect(shown).toContain("    alpha: ok")
    const run2 = shown.find((l) => l.startsWith("run 2 "))!
    // the run took in the subagent's result, the fork's merge-back and alpha's work, each named
    expect(run2).toMatch(/^run 2 {2}beta B1 {2}completed {2}context portable via /)
    for (const kind of ["subagent_result", "merge_back", "provider_handoff"]) {
      expect(run2).toMatch(new RegExp(`H\\d ${kind}`))
    }
    expect(shown.some((l) => /^ {2}H\d subagent_result covers 1 -> B1 /.test(l))).toBe(true)
    expect(shown.some((l) => /^ {2}H\d merge_back covers /.test(l))).toBe(true)
    expect(shown.join("\n")).not.toContain("fork_delta")
    const messages = await ok("show", thread, "--messages")
    expect(messages.split("\n")[0]).toMatch(/^run 1 {2}alpha/)
    expect(messages).not.toContain("coverage:")

    const followed = await runSkein(["follow", thread, "--limit", "200"], env, 10_000)
    const lines = followed.stdout.trimEnd().split("\n")
    for (const [i, line] of lines.entries()) {
      expect(line).toMatch(new RegExp(`^#${i + 1} \\d\\d:\\d\\d:\\d\\d\\.\\d{3} \\S`))
      expect(line).not.toContain("undefined")
    }
    expect(lines[0]).toMatch(/ thread created "talk" in /)
    expect(lines.some((l) => / item 0 of run_\w+: you: first line ⏎ second line /.test(l))).toBe(true)
    expect(lines.some((l) => / provider thread pth_\w+ served run 1, now idle$/.test(l))).toBe(true)
    expect(lines.some((l) => /: \$ ls {2}exit 0$/.test(l))).toBe(true)
    const checkpoints = lines.filter((l) => / checkpoint chk_\w+ of run 1 /.test(l))
    expect(checkpoints.map((l) => / of run 1 (\w+)/.exec(l)![1])).toEqual(["pending", "ready"])
    const from = await ok("follow", thread, "--from", "3", "--limit", "2")
    expect(
      from
        .trimEnd()
        .split("\n")
        .map((l) => l.split(" ")[0])
    ).toEqual(["#3", "#4"])
  }, 90_000)
})
