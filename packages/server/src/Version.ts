/** Skein's version, as the CLI, the MCP server and the ACP agent report it. */
export const SKEIN_VERSION = "0.1.0"
