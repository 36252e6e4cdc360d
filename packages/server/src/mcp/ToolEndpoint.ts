/**
 * Where this server serves Skein's tools (MCP), for `thread.toolCredential` to answer
 * with: set by the transport once it listens, or by a host that mounts the endpoint
 * itself. Without one (the default) a credential comes with no URL.
 */
import { Context } from "effect"

export interface ToolEndpointShape {
  /** The endpoint's absolute URL, once known. */
  current: string | null
}

export class ToolEndpoint extends Context.Reference<ToolEndpoint>()("@skein/server/ToolEndpoint", {
  defaultValue: (): ToolEndpointShape => Object.freeze({ current: null }) as ToolEndpointShape
}) {}
