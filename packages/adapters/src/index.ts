export { LineProcess, scopedEnv } from "./process/LineProcess.js"
export type { ExitStatus, LineProcessOptions } from "./process/LineProcess.js"
export { boundedLines } from "./process/BoundedLines.js"
export type { BoundedLine } from "./process/BoundedLines.js"
export { makeScriptedAdapter, scriptedServerPath } from "./scripted/ScriptedAdapter.js"
export type { ScriptedAdapterOptions } from "./scripted/ScriptedAdapter.js"
export { parseDirectives, recalls, stripRecallNoise } from "./scripted/Directives.js"
export type { Directive } from "./scripted/Directives.js"
export {
  alphaCapabilities,
  betaCapabilities,
  CapabilitiesConfig,
  capabilitiesFor,
  claudeLikeCapabilities,
  codexLikeCapabilities,
  defaultProvidersConfig,
  loadConfigOrDefaults,
  loadProvidersConfig,
  makeProviderAdapters,
  parseProvidersConfig,
  ProviderDriver,
  ProviderInstanceConfig,
  ProvidersConfig,
  providerRegistryLayer,
  registryLayerOf
} from "./ProviderConfig.js"
export { containedPath } from "./workspace/WorkspacePath.js"
export type { Contained } from "./workspace/WorkspacePath.js"
export { ApprovalPolicy } from "./agents/AgentCommon.js"
export { AgentBinaryProblem, inTestedRange, locateAgentBinary } from "./binary/AgentBinary.js"
export type { AgentBinarySpec, LocatedBinary } from "./binary/AgentBinary.js"
export { codexBinarySpec, codexCapabilities, makeCodexAdapter } from "./codex/CodexAdapter.js"
export { unreadNotifications as codexUnreadNotifications } from "./codex/CodexProtocol.js"
export type { CodexAdapterOptions } from "./codex/CodexAdapter.js"
export {
  claudeBinarySpec,
  claudeCapabilities,
  ClaudePermissionMode,
  makeClaudeAdapter
} from "./claude/ClaudeAdapter.js"
export type { ClaudeAdapterOptions } from "./claude/ClaudeAdapter.js"
export * as TurnEvents from "./process/TurnEvents.js"
export { acpCapabilities, capabilitiesOfAgent, makeAcpAdapter } from "./acp/AcpAdapter.js"
export type { AcpAdapterOptions } from "./acp/AcpAdapter.js"
export { makeTurnAssembler } from "./acp/AcpItems.js"
