/**
 * The Claude Code driver. A `claude -p` process in streaming JSON mode serves exactly
 * one Claude session, so a Skein session (one provider instance and workspace) holds
 * a small pool of them (ClaudePool): one per native thread in use, started on demand,
 * closed after `processIdleMs` without a turn (the next turn resumes the session in a
 * new one), all stopped when the Skein session closes.
 *
 * - Threads: a new session gets an id Skein chooses (`--session-id`); an existing one
 *   is resumed (`--resume`); a fork is a new id (`--fork-session`), at a turn with
 *   `--resume-session-at` its last message. Each process starts with an `initialize`
 *   control request: its answer says the session loaded, and a refusal ("already in
 *   use", "no conversation found") ends the process with a message on stderr, which
 *   becomes a typed failure.
 * - Turns: one user message, whose `uuid` (chosen by Skein) is the turn's ref and the
 *   id of that message in Claude's transcript. A handoff block is a text block ahead
 *   of the user's text in that message (delivery `preamble`). The turn ends with the
 *   `result` line. An interrupt is a control request.
 * - Rollback: the session resumes at the message before the turn
 *   (`--resume-session-at`), which Claude Code makes the session's branch with the next
 *   message; until then the plan is kept on disk (ClaudeLaunches).
 * - Approvals: `--permission-prompt-tool stdio` makes the CLI ask before a tool runs;
 *   each request is an `approval_request` item (or answered by the instance's policy).
 * - Subagents: the Task/Agent tool's runs are `child_agent` items; background agents
 *   are turned off (`CLAUDE_CODE_DISABLE_BACKGROUND_TASKS`), so a subagent ends within
 *   the turn that started it.
 */
import * as Path from "node:path"
import type { Autonomy, ProviderAdapter, ProviderCapabilities } from "@skein/domain"
import { defaultCapabilities } from "@skein/domain"
import { Schema } from "effect"
import type { AgentOptions } from "../agents/AgentOptions.js"
import { makeAgentAdapter } from "../agents/AgentOptions.js"
import type { AgentBinarySpec } from "../binary/AgentBinary.js"
import { platformSuffixes } from "../binary/AgentBinary.js"
import { scopedEnv } from "../process/LineProcess.js"
import type { Shared } from "./ClaudeEvents.js"
import { makeLaunches } from "./ClaudeLaunches.js"
import { openSession } from "./ClaudeSession.js"

/** The Claude Code versions this driver was tested with. */
export const claudeBinarySpec: AgentBinarySpec = {
  driver: "claude",
  executable: "claude",
  npmPackage: "@anthropic-ai/claude-code",
  tested: { min: "2.1.332", below: "2.2.0" },
  platformPackages: platformSuffixes().map((suffix) => `@anthropic-ai/claude-code-${suffix}`),
  nativeIn: (platformDir) => [Path.join(platformDir, "claude")]
}

/**
 * What the Claude driver can do: resume, fork at a turn, native rollback; handoffs as a
 * preamble; steer a running turn (a user message written while it runs). An approval
 * waits in its turn: once the turn is over, Claude Code takes no decision.
 */
export const claudeCapabilities: ProviderCapabilities = defaultCapabilities({
  resume: true,
  fork: "at_turn",
  rollback: "native",
  handoffDelivery: ["preamble"],
  summarise: false,
  approvalsOutliveTurn: false,
  steer: true
})

export const ClaudePermissionMode = Schema.Literal("default", "acceptEdits", "plan", "bypassPermissions")
export type ClaudePermissionMode = typeof ClaudePermissionMode.Type

/**
 * Claude Code's config directory is CLAUDE_CONFIG_DIR; the driver keeps its launch plans
 * in `stateDir`. The default command is `claude` on PATH (the platform package's binary).
 */
export interface ClaudeAdapterOptions extends AgentOptions {
  /** Claude Code's `--permission-mode`; default: its own. */
  readonly permissionMode?: ClaudePermissionMode | undefined
  /**
   * A process with no turn for this long is closed; the next turn on its thread starts a
   * new one that resumes the session. Default 2 minutes (ClaudePool).
   */
  readonly processIdleMs?: number | undefined
}

/** Variables the driver always sets, unless the instance's env says otherwise. */
const DRIVER_ENV: Record<string, string> = {
  // A subagent must end within the turn that started it, not report back in a later one.
  CLAUDE_CODE_DISABLE_BACKGROUND_TASKS: "1",
  // A headless child must not replace its own executable mid-session.
  DISABLE_AUTOUPDATER: "1"
}

/**
 * How freely a Claude Code instance acts: approvals as Skein answers them (`accept` when it
 * bypasses permissions), read-only in plan mode, unrestricted when it bypasses them.
 */
export const claudeAutonomy = (options: Pick<ClaudeAdapterOptions, "approvals" | "permissionMode">): Autonomy => ({
  approvals: options.permissionMode === "bypassPermissions" ? "accept" : (options.approvals ?? "ask"),
  sandbox:
    options.permissionMode === "plan"
      ? "read-only"
      : options.permissionMode === "bypassPermissions"
        ? "full"
        : "workspace"
})

export const makeClaudeAdapter = (options: ClaudeAdapterOptions): ProviderAdapter => {
  const env = scopedEnv({ ...DRIVER_ENV, ...options.env }, ["CLAUDE_CONFIG_DIR"])
  const shared: Shared = {
    launches: makeLaunches(options.stateDir),
    turnEnds: new Map(),
    turnStarts: new Map(),
    tips: new Map(),
    models: new Map(),
    tools: new Map()
  }
  return makeAgentAdapter({
    spec: claudeBinarySpec,
    options,
    env,
    runtimeMode: `approvals=${options.approvals ?? "ask"};permissions=${options.permissionMode ?? "default"}`,
    autonomy: claudeAutonomy(options),
    open: (binary, workspace) => openSession(options, env, binary, workspace, shared)
  })
}
