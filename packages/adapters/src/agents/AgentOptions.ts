/**
 * What every driver of a real agent is configured with, and the adapter around a
 * driver's session: locating its binary once, probing it, typed failures.
 */
import type { Autonomy, ProviderAdapter, ProviderCapabilities, ProviderFailureCode, ProviderName } from "@skein/domain"
import { ProviderFailure } from "@skein/domain"
import { Effect } from "effect"
import type { Scope } from "effect"
import type { ProviderSessionHandle } from "@skein/domain"
import type { ApprovalPolicy } from "./AgentCommon.js"
import { binaryFailure } from "./AgentCommon.js"
import type { AgentBinarySpec, LocatedBinary } from "../binary/AgentBinary.js"
import { cachedLocator, locateAgentBinary } from "../binary/AgentBinary.js"

export interface AgentOptions {
  readonly name: ProviderName
  readonly capabilities: ProviderCapabilities
  /** The executable (and leading arguments); default: the driver's executable on PATH. */
  readonly command?: ReadonlyArray<string> | undefined
  /** Variables the process gets beyond PATH, HOME and the agent's config directory (when Skein has it). */
  readonly env?: Record<string, string> | undefined
  readonly model?: string | null | undefined
  /** How Skein answers the agent's approval requests (default `ask`). */
  readonly approvals?: ApprovalPolicy | undefined
  readonly allowUntestedVersion?: boolean | undefined
  /** Working directory of threads that have no workspace (a driver may keep state there too). */
  readonly stateDir: string
  /** SIGTERM → SIGKILL grace when a process stops. Default 2000 ms. */
  readonly graceMs?: number | undefined
}

/** The constructor of a provider's failures. */
export type Failure = (kind: ProviderFailure["kind"], detail: string, code?: ProviderFailureCode) => ProviderFailure

export const failureOf =
  (provider: string): Failure =>
  (kind, detail, code) =>
    new ProviderFailure({ provider, kind, detail, ...(code === undefined ? {} : { code }) })

/**
 * A driver as the port: its binary located once (and probed), each session opened by
 * `open` with the binary found.
 */
export const makeAgentAdapter = (args: {
  readonly spec: AgentBinarySpec
  readonly options: AgentOptions
  /** The whole environment of the agent's processes. */
  readonly env: Record<string, string>
  readonly runtimeMode: string
  readonly autonomy: Autonomy
  readonly open: (
    binary: LocatedBinary,
    workspace: string | null
  ) => Effect.Effect<ProviderSessionHandle, ProviderFailure, Scope.Scope>
}): ProviderAdapter => {
  const { options } = args
  const locate = cachedLocator(
    locateAgentBinary(args.spec, {
      command: options.command,
      env: args.env,
      allowUntestedVersion: options.allowUntestedVersion
    })
  )
  return {
    name: options.name,
    driver: args.spec.driver,
    capabilities: options.capabilities,
    runtimeMode: args.runtimeMode,
    autonomy: args.autonomy,
    model: options.model ?? null,
    openSession: ({ workspace }) =>
      Effect.flatMap(
        Effect.mapError(locate, (problem) => binaryFailure(options.name, problem)),
        (binary) => args.open(binary, workspace)
      ),
    probe: Effect.match(locate, {
      onSuccess: (found) => ({ path: found.path, version: found.version, usable: true, problem: null }),
      onFailure: (problem) => ({
        path: problem.path,
        version: problem.version,
        usable: false,
        problem: problem.message
      })
    })
  }
}
