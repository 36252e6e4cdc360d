/**
 * Provider instances from configuration: the config file's schema, its loader
 * (typed, actionable errors) and the ProviderRegistry layer built from it.
 *
 *   {"providers": {"alpha": {"driver": "scripted", "capabilities": {"fork": "at_turn"},
 *                            "command": ["node", "server.js"], "env": {"K": "V"}, "model": "m"}}}
 */
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { Effect, Layer, ParseResult, Schema } from "effect"
import type { ProviderAdapter } from "@skein/domain"
import {
  defaultCapabilities,
  ForkCapability,
  HandoffDelivery,
  InvalidInput,
  ProviderCapabilities,
  ProviderName,
  ProviderRegistry,
  RollbackCapability
} from "@skein/domain"
import { acpCapabilities, makeAcpAdapter } from "./acp/AcpAdapter.js"
import { ApprovalPolicy } from "./agents/AgentCommon.js"
import { ClaudePermissionMode, claudeCapabilities, makeClaudeAdapter } from "./claude/ClaudeAdapter.js"
import { codexCapabilities, makeCodexAdapter } from "./codex/CodexAdapter.js"
import { AskForApproval, SandboxMode } from "./codex/CodexProtocol.js"
import { makeScriptedAdapter } from "./scripted/ScriptedAdapter.js"

/** The default `alpha` instance: resume, fork at a turn, native rollback, steer. */
export const alphaCapabilities: ProviderCapabilities = defaultCapabilities({
  resume: true,
  fork: "at_turn",
  rollback: "native",
  steer: true
})
/** The default `beta` instance: resume, but no fork, no rollback, no steer. */
export const betaCapabilities: ProviderCapabilities = defaultCapabilities({
  resume: true,
  fork: "none",
  rollback: "none"
})
/** A Codex-like profile: handoff as a developer message. */
export const codexLikeCapabilities: ProviderCapabilities = defaultCapabilities({
  resume: true,
  fork: "at_turn",
  rollback: "native",
  handoffDelivery: ["developer"]
})
/** A Claude-like profile: handoff in the system prompt. */
export const claudeLikeCapabilities: ProviderCapabilities = defaultCapabilities({
  resume: true,
  fork: "at_turn",
  rollback: "native",
  handoffDelivery: ["system"]
})

export const ProviderDriver = Schema.Literal("scripted", "codex", "claude", "acp")
export type ProviderDriver = typeof ProviderDriver.Type

/** Capabilities in a config file: any subset; the rest comes from the driver's profile. */
export const CapabilitiesConfig = Schema.Struct({
  resume: Schema.optional(Schema.Boolean),
  fork: Schema.optional(ForkCapability),
  rollback: Schema.optional(RollbackCapability),
  handoffDelivery: Schema.optional(Schema.Array(HandoffDelivery)),
  contextWindowTokens: Schema.optional(Schema.Int.pipe(Schema.positive())),
  summarise: Schema.optional(Schema.Boolean),
  approvalsOutliveTurn: Schema.optional(Schema.Boolean),
  steer: Schema.optional(Schema.Boolean)
})
export type CapabilitiesConfig = typeof CapabilitiesConfig.Type

export const ProviderInstanceConfig = Schema.Struct({
  driver: ProviderDriver,
  capabilities: Schema.optional(CapabilitiesConfig),
  /**
   * The executable and any leading arguments; the adapter appends its protocol arguments
   * (acp: the agent's whole command line, required).
   */
  command: Schema.optional(Schema.NonEmptyArray(Schema.NonEmptyString)),
  /**
   * Variables the process gets beyond PATH and HOME (and, for codex and claude, their
   * config directory variable, CODEX_HOME or CLAUDE_CONFIG_DIR, when Skein has it).
   */
  env: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  model: Schema.optional(Schema.String),
  /** codex, claude, acp: how Skein answers the agent's approval requests (default "ask": a client answers). */
  approvals: Schema.optional(ApprovalPolicy),
  /** codex: when Codex asks for approval (its approval policy); default: Codex's own config. */
  askForApproval: Schema.optional(AskForApproval),
  /** codex: Codex's sandbox for the commands it runs; default: Codex's own config. */
  sandbox: Schema.optional(SandboxMode),
  /** claude: Claude Code's permission mode; default: its own. */
  permissionMode: Schema.optional(ClaudePermissionMode),
  /** claude: stop a session's process after this long without a turn (default 120000). */
  processIdleMs: Schema.optional(Schema.Int.pipe(Schema.positive())),
  /** codex, claude: use an executable whose version is outside the tested range. */
  allowUntestedVersion: Schema.optional(Schema.Boolean),
  /** acp: session config options set on each session (`{"mode": "default"}`). */
  configOptions: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String }))
})
export type ProviderInstanceConfig = typeof ProviderInstanceConfig.Type

export const ProvidersConfig = Schema.Struct({
  providers: Schema.Record({ key: ProviderName, value: ProviderInstanceConfig }),
  /**
   * Directories inside which thread workspaces must lie (absolute paths). Without
   * it, any directory but the filesystem root and the home directory itself.
   */
  workspaceRoots: Schema.optional(
    Schema.Array(
      Schema.String.pipe(
        Schema.filter((path) => Path.isAbsolute(path) || `workspace root ${JSON.stringify(path)} must be absolute`)
      )
    )
  ),
  /**
   * Git checkpoints: `maxFileBytes`, the largest file a checkpoint holds (larger ones are
   * left out and recorded; default 50 MiB); `keepRuns`, how many of a thread's newest
   * run checkpoints keep their refs (older ones are pruned; default all).
   */
  checkpoints: Schema.optional(
    Schema.Struct({
      maxFileBytes: Schema.optional(Schema.Int.pipe(Schema.positive())),
      keepRuns: Schema.optional(Schema.Int.pipe(Schema.positive()))
    })
  )
})
export type ProvidersConfig = typeof ProvidersConfig.Type

/** What the daemon runs without a config file. */
export const defaultProvidersConfig: ProvidersConfig = {
  providers: {
    [ProviderName.make("alpha")]: { driver: "scripted", capabilities: { ...alphaCapabilities } },
    [ProviderName.make("beta")]: { driver: "scripted", capabilities: { ...betaCapabilities } }
  }
}

const driverProfile: Record<ProviderDriver, ProviderCapabilities> = {
  scripted: alphaCapabilities,
  codex: codexCapabilities,
  claude: claudeCapabilities,
  acp: acpCapabilities
}

/** Handoff deliveries each driver can carry out. */
const driverDeliveries: Record<ProviderDriver, ReadonlyArray<string> | null> = {
  scripted: null,
  codex: codexCapabilities.handoffDelivery,
  claude: claudeCapabilities.handoffDelivery,
  acp: acpCapabilities.handoffDelivery
}

/** Fields that only some drivers read: naming one for another driver is a mistake worth reporting. */
const driverOnly: Record<string, ReadonlyArray<ProviderDriver>> = {
  approvals: ["codex", "claude", "acp"],
  askForApproval: ["codex"],
  sandbox: ["codex"],
  permissionMode: ["claude"],
  processIdleMs: ["claude"],
  allowUntestedVersion: ["codex", "claude"],
  configOptions: ["acp"]
}

/** What the schema cannot say: fields meant for another driver, deliveries the driver cannot make. */
const checkInstance = (name: string, instance: ProviderInstanceConfig): string | null => {
  if (instance.driver === "acp" && instance.command === undefined) {
    return `provider "${name}": driver acp needs "command", the agent's command line (["npx", "some-acp-agent"]).`
  }
  for (const [field, drivers] of Object.entries(driverOnly)) {
    if (field in instance && !drivers.includes(instance.driver)) {
      return `provider "${name}": "${field}" applies to driver ${drivers.join(" or ")}, not ${instance.driver}. Remove it.`
    }
  }
  const supported = driverDeliveries[instance.driver]
  const asked = instance.capabilities?.handoffDelivery
  if (supported !== null && asked !== undefined) {
    const unsupported = asked.filter((d) => !supported.includes(d))
    if (unsupported.length > 0) {
      return `provider "${name}": driver ${instance.driver} cannot deliver handoffs as ${unsupported.join(", ")}; it supports ${supported.join(", ")}.`
    }
  }
  return null
}

/** The driver's profile with the configured overrides applied. */
export const capabilitiesFor = (driver: ProviderDriver, overrides: CapabilitiesConfig = {}): ProviderCapabilities =>
  ProviderCapabilities.make({
    resume: overrides.resume ?? driverProfile[driver].resume,
    fork: overrides.fork ?? driverProfile[driver].fork,
    rollback: overrides.rollback ?? driverProfile[driver].rollback,
    handoffDelivery: overrides.handoffDelivery ?? driverProfile[driver].handoffDelivery,
    contextWindowTokens: overrides.contextWindowTokens ?? driverProfile[driver].contextWindowTokens,
    summarise: overrides.summarise ?? driverProfile[driver].summarise,
    approvalsOutliveTurn: overrides.approvalsOutliveTurn ?? driverProfile[driver].approvalsOutliveTurn,
    steer: overrides.steer ?? driverProfile[driver].steer
  })

/** One line per wrong path: `at providers.alpha.fork: expected "none" | "latest" | "at_turn", got "sometimes"`. */
const formatIssues = (error: ParseResult.ParseError): string => {
  const byPath = new Map<string, Array<string>>()
  for (const issue of ParseResult.ArrayFormatter.formatErrorSync(error)) {
    const where = issue.path.length === 0 ? "the top level" : issue.path.map(String).join(".")
    byPath.set(where, [...(byPath.get(where) ?? []), issue.message])
  }
  const lines: Array<string> = []
  for (const [where, messages] of byPath) {
    const expected = messages.map((m) => /^Expected (.+), actual (.+)$/s.exec(m))
    if (expected.every((m) => m !== null)) {
      // "Expected undefined" is the optional field's other branch: noise.
      const options = [...new Set(expected.map((m) => m![1]!))].filter((o) => o !== "undefined")
      if (options.length > 0) lines.push(`at ${where}: expected ${options.join(" | ")}, got ${expected[0]![2]}`)
    } else {
      lines.push(`at ${where}: ${[...new Set(messages)].join("; ")}`)
    }
  }
  return lines.slice(0, 5).join("; ")
}

/** Decodes a parsed config document; `source` names it in error messages. */
export const parseProvidersConfig = (document: unknown, source: string): Effect.Effect<ProvidersConfig, InvalidInput> =>
  Schema.decodeUnknown(ProvidersConfig, { errors: "all", onExcessProperty: "error" })(document).pipe(
    Effect.mapError(
      (error) =>
        new InvalidInput({
          detail: `provider config ${source} is wrong ${formatIssues(error)}. Expected {"providers": {NAME: {"driver": "scripted" | "codex" | "claude" | "acp", "capabilities"?, "command"?, "env"?, "model"?, "approvals"?, …}}, "workspaceRoots"?: [ABSOLUTE_PATH], "checkpoints"?: {"maxFileBytes"?: N, "keepRuns"?: N}}.`
        })
    )
  )

/** Reads and decodes a provider config file. */
export const loadProvidersConfig = (path: string): Effect.Effect<ProvidersConfig, InvalidInput> =>
  Effect.tryPromise({
    try: () => Fs.readFile(path, "utf8"),
    catch: (error) =>
      new InvalidInput({
        detail: `cannot read provider config ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}. Pass an existing JSON file or omit --config.`
      })
  }).pipe(
    Effect.flatMap((text) =>
      Effect.try({
        try: () => JSON.parse(text) as unknown,
        catch: (error) =>
          new InvalidInput({
            detail: `provider config ${path} is not valid JSON (${error instanceof Error ? error.message : String(error)}).`
          })
      })
    ),
    Effect.flatMap((document) => parseProvidersConfig(document, path))
  )

/**
 * One adapter per configured instance; scripted, Codex and Claude instances keep their
 * state under `<dataDir>/providers/<name>`. ACP instances are asked what they can do
 * (`initialize`), all at once.
 */
export const makeProviderAdapters = (
  config: ProvidersConfig,
  options: { readonly dataDir: string }
): Effect.Effect<ReadonlyArray<ProviderAdapter>, InvalidInput> =>
  Effect.forEach(
    Object.entries(config.providers),
    ([key, instance]) => {
      const name = ProviderName.make(key)
      const problem = checkInstance(name, instance)
      if (problem !== null) return Effect.fail(new InvalidInput({ detail: problem }))
      const stateDir = Path.join(options.dataDir, "providers", name)
      const capabilities = capabilitiesFor(instance.driver, instance.capabilities)
      /** What every driver of a real agent is configured with (AgentOptions). */
      const agentOptions = () => ({
        name,
        capabilities,
        stateDir,
        command: instance.command,
        env: instance.env,
        model: instance.model ?? null,
        approvals: instance.approvals,
        allowUntestedVersion: instance.allowUntestedVersion
      })
      switch (instance.driver) {
        case "scripted":
          return Effect.succeed(
            makeScriptedAdapter({
              name,
              capabilities,
              stateDir,
              command: instance.command,
              env: instance.env,
              model: instance.model ?? null
            })
          )
        case "codex":
          return Effect.succeed(
            makeCodexAdapter({ ...agentOptions(), askForApproval: instance.askForApproval, sandbox: instance.sandbox })
          )
        case "claude":
          return Effect.succeed(
            makeClaudeAdapter({
              ...agentOptions(),
              permissionMode: instance.permissionMode,
              processIdleMs: instance.processIdleMs
            })
          )
        case "acp":
          return makeAcpAdapter({
            name,
            command: instance.command!,
            env: instance.env,
            model: instance.model ?? null,
            approvals: instance.approvals,
            configOptions: instance.configOptions,
            capabilities: instance.capabilities,
            stateDir
          })
      }
    },
    { concurrency: "unbounded" }
  )

/** The config file's contents, or the defaults (`alpha` and `beta`, no workspace roots) without one. */
export const loadConfigOrDefaults = (configFile: string | undefined): Effect.Effect<ProvidersConfig, InvalidInput> =>
  configFile === undefined ? Effect.succeed(defaultProvidersConfig) : loadProvidersConfig(configFile)

/** The ProviderRegistry of a config. */
export const registryLayerOf = (
  config: ProvidersConfig,
  options: { readonly dataDir: string }
): Layer.Layer<ProviderRegistry, InvalidInput> =>
  Layer.effect(
    ProviderRegistry,
    Effect.map(makeProviderAdapters(config, options), (adapters) => ({ adapters }))
  )

/** The ProviderRegistry from a config file, or the default `alpha` and `beta` scripted instances without one. */
export const providerRegistryLayer = (options: {
  readonly configFile?: string | undefined
  readonly dataDir: string
}): Layer.Layer<ProviderRegistry, InvalidInput> =>
  Layer.unwrapEffect(Effect.map(loadConfigOrDefaults(options.configFile), (config) => registryLayerOf(config, options)))
