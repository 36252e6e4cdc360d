/**
 * @skein/server: Skein as a daemon, a CLI, a typed RPC service and an embeddable Layer.
 */
export {
  checkBind,
  checkToken,
  InsecureBind,
  isLoopbackHost,
  MIN_TOKEN_CHARS,
  presentedToken,
  tokenMatches,
  tokenWeakness,
  WeakToken
} from "./Auth.js"
export {
  clientUrl,
  followThread,
  HandshakeRefused,
  makeSkeinClient,
  resolveClientToken,
  SkeinClient
} from "./Client.js"
export type { ClientToken, ClientTokenError, FollowOptions, SkeinClientOptions, SkeinClientShape } from "./Client.js"
export { makeSkeinClusterClient } from "./ClusterClient.js"
export type { SkeinClusterClientOptions, SkeinClusterClientShape } from "./ClusterClient.js"
export {
  admitUpgrade,
  hostOfHeader,
  InvalidAllowedHost,
  InvalidOrigin,
  makeAccessPolicy,
  normaliseOrigin
} from "./Handshake.js"
export type { AccessPolicy, Admission } from "./Handshake.js"
export { defaultDataDir, resolvePaths, startDaemon } from "./Daemon.js"
export { checkDataDir, dataDirProblem, ensureDataDir, UnsafeDataDir } from "./DataDir.js"
export type { DaemonOptions, StartedDaemon } from "./Daemon.js"
export { coverageSummary, demoRegistryLayer, driveSeed, matchesSeed, seedExpectedCoverage, seedScript } from "./Demo.js"
export type { CoverageSummary } from "./Demo.js"
export { SkeinEmbedding } from "./Embedding.js"
export type { SkeinEmbeddingOptions, SkeinRouteOptions } from "./Embedding.js"
export { DEFAULT_MAX_FRAME_BYTES, makeGuardedProtocol } from "./GuardedProtocol.js"
export type { Connection, GuardedProtocol } from "./GuardedProtocol.js"
export { MAX_DEPTH, scanFrame, screenMessage } from "./Screening.js"
export type { FrameScan, ScreenContext, Screened } from "./Screening.js"
export { coverageLines, handoffLines, showLines } from "./Presentation.js"
export { laneCoverage, ordinalRanges } from "./CoverageText.js"
export { SkeinRpcHandlers } from "./RpcHandlers.js"
export { NoProviders, skeinRuntimeLayer } from "./SkeinRuntime.js"
export type { SkeinRuntimeOptions } from "./SkeinRuntime.js"
export { serveStdio } from "./Stdio.js"
export type { StdioOptions } from "./Stdio.js"
export {
  generateToken,
  loadOrCreateToken,
  readCheckedTokenFile,
  readTokenFile,
  TokenFileError,
  tokenFilePath
} from "./TokenFile.js"
export { makeSkeinStdioClient, SkeinStdioClient, SkeinStdioClientError } from "./StdioClient.js"
export type { SkeinStdioClientOptions } from "./StdioClient.js"
export { makeWebSocketEndpoint } from "./WebSocketEndpoint.js"
export type { EndpointOptions } from "./WebSocketEndpoint.js"
export { DEFAULT_HOST, DEFAULT_PORT, DEFAULT_RPC_PATH, serveWebSocket } from "./WebSocketServer.js"
export type { RunningServer, WebSocketServerOptions } from "./WebSocketServer.js"
export { runCli, skeinCommand } from "./Cli.js"
export { DEFAULT_MCP_PATH, makeMcpEndpoint } from "./mcp/McpEndpoint.js"
export type { McpEndpointOptions } from "./mcp/McpEndpoint.js"
export { defaultSubagentLimits, NotASubagent, SubagentLimitReached, type SubagentLimits } from "./mcp/SubagentPolicy.js"
export { otlpLayer, telemetryFromEnv, telemetrySettings } from "./Telemetry.js"
export type { TelemetryEnv, TelemetrySettings } from "./Telemetry.js"
