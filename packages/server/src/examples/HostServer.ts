/**
 * An example host application embedding Skein: its own route (GET /health) and the
 * Skein RPC mounted under /skein/rpc on the same HTTP server and router.
 *
 *   node packages/server/dist/src/examples/HostServer.js [PORT]
 */
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import { HttpLayerRouter, HttpServer, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Console, Layer } from "effect"
import { isLoopbackHost } from "../Auth.js"
import { SkeinEmbedding } from "../Embedding.js"

export interface HostServerOptions {
  readonly host?: string | undefined
  readonly port?: number | undefined
  readonly dbPath: string
  readonly dataDir: string
  readonly configFile?: string | undefined
  readonly token?: string | undefined
}

/** The host's own routes. */
export const HostRoutes = HttpLayerRouter.add(
  "GET",
  "/health",
  HttpServerResponse.json({ status: "ok", app: "example-host" })
)

/** The whole host: its routes and Skein on one router, served on host:port (0 = a free port). */
export const hostServerLayer = (options: HostServerOptions) =>
  HttpLayerRouter.serve(
    Layer.mergeAll(
      HostRoutes,
      SkeinEmbedding.layer({
        path: "/skein/rpc",
        // Skein's tools for agents (MCP), behind tool credentials (thread.toolCredential).
        mcpPath: "/skein/mcp",
        dbPath: options.dbPath,
        dataDir: options.dataDir,
        configFile: options.configFile,
        token: options.token,
        // Served on loopback: answer only requests addressed to a loopback name.
        allowedHosts: isLoopbackHost(options.host ?? "127.0.0.1") ? [] : undefined
      })
    ),
    { disableLogger: true, disableListenLog: true }
  ).pipe(
    Layer.provideMerge(
      NodeHttpServer.layer(() => Http.createServer(), { host: options.host ?? "127.0.0.1", port: options.port ?? 0 })
    )
  )

/** Prints `example host listening on http://HOST:PORT` once it accepts connections. */
const announce = Layer.effectDiscard(
  HttpServer.addressWith((address) =>
    Console.log(
      `example host listening on http://${address._tag === "TcpAddress" ? `${address.hostname}:${address.port}` : address.path}`
    )
  )
)

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const dataDir = process.env["SKEIN_HOME"] ?? Path.join(Os.tmpdir(), "skein-example-host")
  announce.pipe(
    Layer.provideMerge(
      hostServerLayer({ port: Number(process.argv[2] ?? 8080), dataDir, dbPath: Path.join(dataDir, "skein.db") })
    ),
    Layer.launch,
    NodeRuntime.runMain
  )
}
