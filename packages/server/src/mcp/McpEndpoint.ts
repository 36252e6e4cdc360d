/**
 * Skein's tools over MCP (Streamable HTTP), as an HTTP handler to mount at `/mcp`.
 *
 * A request is admitted as the RPC's are (a loopback Host or an allowed one; no page of
 * a foreign `Origin`), then must carry `Authorization: Bearer CREDENTIAL`, a live tool
 * credential (the Orchestrator's `toolCredentials`): without one it is answered 401. The credential names
 * the app thread the tools act for. The SDK (`@modelcontextprotocol/server`) serves
 * each request on a fresh server, statelessly, for 2025-era clients as for newer ones.
 */
import { createMcpHandler } from "@modelcontextprotocol/server"
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import type { HttpApp } from "@effect/platform"
import { Orchestrator } from "@skein/runtime"
import { Effect, Runtime, type Scope } from "effect"
import { bearerToken, type WeakToken } from "../Auth.js"
import { admitUpgrade, type InvalidAllowedHost, type InvalidOrigin, makeAccessPolicy } from "../Handshake.js"
import { makeToolServer } from "./SkeinTools.js"
import { defaultSubagentLimits, type SubagentLimits } from "./SubagentPolicy.js"
import { SKEIN_VERSION } from "../Version.js"

export const DEFAULT_MCP_PATH = "/mcp"

export interface McpEndpointOptions {
  /** Origins (`scheme://host[:port]`) whose pages may call the tools. */
  readonly allowedOrigins?: ReadonlyArray<string> | undefined
  /** Host names beyond loopback a request may be addressed to; undefined: any. */
  readonly allowedHosts?: ReadonlyArray<string> | undefined
  readonly limits?: SubagentLimits | undefined
}

const json = (status: number, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  HttpServerResponse.unsafeJson(body, { status, headers })

/** The handler; closing the scope ends the requests in flight. */
export const makeMcpEndpoint = (
  options: McpEndpointOptions = {}
): Effect.Effect<
  HttpApp.Default<never, HttpServerRequest.HttpServerRequest>,
  InvalidOrigin | InvalidAllowedHost | WeakToken,
  Orchestrator | Scope.Scope
> =>
  Effect.gen(function* () {
    const policy = yield* makeAccessPolicy({
      allowedOrigins: options.allowedOrigins,
      allowedHosts: options.allowedHosts
    })
    const orchestrator = yield* Orchestrator
    const credentials = orchestrator.toolCredentials
    const runtime = yield* Effect.runtime<never>()
    const deps = {
      orchestrator,
      limits: options.limits ?? defaultSubagentLimits,
      run: Runtime.runPromiseExit(runtime)
    }
    const handler = createMcpHandler(
      (context) => makeToolServer(deps, context.authInfo!.clientId as never, SKEIN_VERSION),
      {
        legacy: "stateless",
        onerror: (error) => Runtime.runFork(runtime)(Effect.logDebug(`MCP: ${error.message}`))
      }
    )
    yield* Effect.addFinalizer(() => Effect.promise(() => handler.close()))

    return Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const admission = admitUpgrade({ headers: request.headers, url: request.url }, { ...policy, token: undefined })
      if (admission._tag === "Refuse") {
        const reason =
          admission.status === 403
            ? `Skein refuses tool calls from pages of origin ${JSON.stringify(admission.origin)}. Start the daemon with --allow-origin ORIGIN to let a page of yours call them.`
            : admission.reason
        return json(admission.status, { error: reason })
      }
      const authorization = request.headers["authorization"]
      const token = authorization === undefined ? undefined : bearerToken(authorization)
      const threadId = token === undefined ? undefined : credentials.threadOf(token)
      if (token === undefined || threadId === undefined) {
        return json(
          401,
          {
            error:
              token === undefined
                ? "Skein's tools need a tool credential: send `Authorization: Bearer CREDENTIAL` (a host gets one with thread.toolCredential)."
                : "This tool credential is not valid (it was revoked, or its session ended). Ask for a new one with thread.toolCredential."
          },
          { "www-authenticate": `Bearer realm="skein", error="invalid_token"` }
        )
      }
      const web = yield* Effect.orDie(HttpServerRequest.toWeb(request))
      const response = yield* Effect.promise((signal) =>
        handler.fetch(new Request(web, { signal }), { authInfo: { token, clientId: threadId, scopes: [] } })
      )
      return HttpServerResponse.fromWeb(response)
    })
  })
