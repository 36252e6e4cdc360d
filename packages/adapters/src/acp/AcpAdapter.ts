/**
 * The `acp` driver: any agent that speaks the Agent Client Protocol (version 1) over
 * stdio behind the provider port, Skein as its client.
 *
 * - Process: the configured command, one per instance and workspace, in a process group
 *   of its own with exactly the configured environment (plus PATH and HOME); closing
 *   the session's scope stops it with its group.
 * - Capabilities: what the agent answers to `initialize`, asked once when the instance
 *   is made (a process started and stopped for it): resume from `session/resume` or
 *   `loadSession`, fork (`latest`) from `session/fork`, Skein's tools from MCP over HTTP.
 *   No rollback, no steer, no summaries; handoffs go as a preamble block of the prompt.
 *   Configured capabilities override what the agent says.
 * - Threads and turns: AcpThreads and AcpTurns. What the agent reports becomes turn
 *   items (AcpItems); thought chunks become `reasoning`, which never leaves the provider.
 * - Files: `fs/read_text_file` and `fs/write_text_file` inside the workspace only;
 *   terminals are not offered; any other request gets a JSON-RPC error (AcpEvents).
 */
import type { ProviderAdapter, ProviderCapabilities, ProviderName } from "@skein/domain"
import { defaultAutonomy, defaultCapabilities, ProviderCapabilities as Capabilities } from "@skein/domain"
import { Effect, Either } from "effect"
import type { ApprovalPolicy } from "../agents/AgentCommon.js"
import { scopedEnv } from "../process/LineProcess.js"
import type { AgentCapabilities, InitializeResult } from "./AcpProtocol.js"
import { openSession, probeAgent } from "./AcpSession.js"
import { resumeMethodOf } from "./AcpThreads.js"

/** What an ACP agent can do before it has said anything: continue in new sessions only. */
export const acpCapabilities: ProviderCapabilities = defaultCapabilities({
  resume: false,
  fork: "none",
  rollback: "none",
  handoffDelivery: ["preamble"],
  summarise: false,
  approvalsOutliveTurn: false,
  steer: false
})

/** The capabilities an agent's `initialize` answer gives the runtime. */
export const capabilitiesOfAgent = (agent: AgentCapabilities): ProviderCapabilities =>
  Capabilities.make({
    ...acpCapabilities,
    resume: resumeMethodOf(agent) !== null,
    fork: agent.sessionCapabilities?.fork != null ? "latest" : "none"
  })

export interface AcpAdapterOptions {
  readonly name: ProviderName
  /** The agent's executable and its arguments. */
  readonly command: readonly [string, ...Array<string>]
  /** Variables the agent gets beyond PATH and HOME. */
  readonly env?: Record<string, string> | undefined
  /** Set on each session as its `model` config option; default: the agent's own. */
  readonly model?: string | null | undefined
  /** How Skein answers the agent's permission requests (default `ask`). */
  readonly approvals?: ApprovalPolicy | undefined
  /** Session config options set on each session the driver holds (`{"mode": "default"}`). */
  readonly configOptions?: Record<string, string> | undefined
  /** Capabilities that override what the agent says. */
  readonly capabilities?:
    { readonly [K in keyof ProviderCapabilities]?: ProviderCapabilities[K] | undefined } | undefined
  /** Working directory of threads that have no workspace. */
  readonly stateDir: string
  /** SIGTERM → SIGKILL grace when the process stops. Default 2000 ms. */
  readonly graceMs?: number | undefined
}

/**
 * An ACP instance as the port, its capabilities from the agent's `initialize`: asked once
 * when the instance is made, and again by every session it opens, so that an agent that
 * could not start at first (a package still downloading, a login missing) is known by
 * what it says once it does. Until it has said anything the instance continues in new
 * sessions only; its probe says why it is not usable.
 */
export const makeAcpAdapter = (options: AcpAdapterOptions): Effect.Effect<ProviderAdapter> =>
  Effect.gen(function* () {
    const env = scopedEnv(options.env ?? {})
    const overrides = Object.fromEntries(
      Object.entries(options.capabilities ?? {}).filter(([, value]) => value !== undefined)
    )
    /** What the agent last said of itself (or why it said nothing), and the capabilities it gives. */
    let known: { readonly told: Either.Either<InitializeResult, string>; readonly capabilities: ProviderCapabilities }
    const learn = (told: Either.Either<InitializeResult, string>) => {
      const base = Either.isRight(told) ? capabilitiesOfAgent(told.right.agentCapabilities ?? {}) : acpCapabilities
      known = { told, capabilities: Capabilities.make({ ...base, ...overrides }) }
    }
    learn(Either.mapLeft(yield* Effect.either(probeAgent(options, env)), (failure) => failure.detail))
    const said = (agent: InitializeResult) => Effect.sync(() => learn(Either.right(agent)))
    return {
      name: options.name,
      driver: "acp",
      get capabilities() {
        return known.capabilities
      },
      runtimeMode: `approvals=${options.approvals ?? "ask"};config=${JSON.stringify(options.configOptions ?? {})}`,
      autonomy: { ...defaultAutonomy, approvals: options.approvals ?? "ask" },
      model: options.model ?? null,
      openSession: ({ workspace }) => openSession(options, env, workspace, said),
      probe: Effect.sync(() => ({
        path: options.command[0],
        version: Either.isRight(known.told) ? (known.told.right.agentInfo?.version ?? null) : null,
        usable: Either.isRight(known.told),
        problem: Either.isLeft(known.told) ? known.told.left : null
      }))
    } satisfies ProviderAdapter
  })
