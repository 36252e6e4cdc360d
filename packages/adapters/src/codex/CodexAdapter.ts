/**
 * The Codex driver: one `codex app-server` process per session (a Skein session is one
 * provider instance and workspace), serving every Codex thread of that session.
 *
 * - Threads: `thread/start`; `thread/resume` and `thread/fork` with `excludeTurns`, so
 *   the server never sends a thread's whole history (history, when the driver needs
 *   it, is paged with `thread/turns/list`). A resume works in a fresh process: that is
 *   how a thread continues after Skein or the process restarted (cold resume).
 * - Turns: `turn/start` answers at once with the turn's id (reported as TurnStarted);
 *   items arrive as `item/completed` notifications and the end as `turn/completed`.
 *   A handoff block goes ahead of the user's message in the same turn's input
 *   (delivery `preamble`), so the model reads it in that very request and Codex stores
 *   it with the turn.
 * - Fork at a turn: `thread/fork` with `lastTurnId` (inclusive). Rollback: the turn is
 *   looked up with `thread/turns/list`, then `thread/revert` drops it and every later turn
 *   (a thread this process has not loaded, as after a restart, is resumed first).
 * - Approvals: Codex's requests surface as open `approval_request` items until a client
 *   answers (`respondApproval`), unless the instance's policy answers them itself.
 * - Unknown notifications are ignored; lines that do not decode are logged and skipped;
 *   stderr is drained into a tail kept for error messages.
 */
import type { Autonomy, ProviderAdapter, ProviderCapabilities } from "@skein/domain"
import { defaultCapabilities } from "@skein/domain"
import type { AgentOptions } from "../agents/AgentOptions.js"
import { makeAgentAdapter } from "../agents/AgentOptions.js"
import type { AgentBinarySpec } from "../binary/AgentBinary.js"
import { platformSuffixes } from "../binary/AgentBinary.js"
import { scopedEnv } from "../process/LineProcess.js"
import { openSession } from "./CodexSession.js"
import type { AskForApproval, SandboxMode } from "./CodexProtocol.js"
import * as Fs from "node:fs"
import * as Path from "node:path"

/** The Codex versions this driver was tested with. */
export const codexBinarySpec: AgentBinarySpec = {
  driver: "codex",
  executable: "codex",
  npmPackage: "@openai/codex",
  tested: { min: "0.171.0", below: "0.172.0" },
  platformPackages: platformSuffixes().map((suffix) => `@openai/codex-${suffix}`),
  nativeIn: (platformDir) => {
    const vendor = Path.join(platformDir, "vendor")
    try {
      return Fs.readdirSync(vendor).map((target) => Path.join(vendor, target, "bin", "codex"))
    } catch {
      return []
    }
  }
}

/**
 * What the Codex driver can do: resume, fork at a turn, native rollback; handoffs as a
 * preamble; steer a running turn (`turn/steer`). An approval waits in its turn: once the
 * turn is over, Codex takes no decision.
 */
export const codexCapabilities: ProviderCapabilities = defaultCapabilities({
  resume: true,
  fork: "at_turn",
  rollback: "native",
  handoffDelivery: ["preamble"],
  summarise: false,
  approvalsOutliveTurn: false,
  steer: true
})

/** Codex's config directory is CODEX_HOME; `stateDir` is the working directory of threads without a workspace. */
export interface CodexAdapterOptions extends AgentOptions {
  /** When Codex asks for approval (its `approvalPolicy`); default: Codex's own configuration. */
  readonly askForApproval?: AskForApproval | undefined
  /** Codex's sandbox for commands; default: Codex's own configuration. */
  readonly sandbox?: SandboxMode | undefined
}

/**
 * How freely a Codex instance acts: approvals as Skein answers them, or `accept` when
 * Codex never asks; its sandbox as configured (Codex's own default writes in the workspace).
 */
export const codexAutonomy = (
  options: Pick<CodexAdapterOptions, "approvals" | "askForApproval" | "sandbox">
): Autonomy => ({
  approvals: options.askForApproval === "never" ? "accept" : (options.approvals ?? "ask"),
  sandbox:
    options.sandbox === "read-only" ? "read-only" : options.sandbox === "danger-full-access" ? "full" : "workspace"
})

export const makeCodexAdapter = (options: CodexAdapterOptions): ProviderAdapter => {
  const env = scopedEnv(options.env ?? {}, ["CODEX_HOME"])
  return makeAgentAdapter({
    spec: codexBinarySpec,
    options,
    env,
    runtimeMode: `approvals=${options.approvals ?? "ask"};ask=${options.askForApproval ?? "default"};sandbox=${options.sandbox ?? "default"}`,
    autonomy: codexAutonomy(options),
    open: (binary, workspace) => openSession(options, env, binary, workspace)
  })
}
