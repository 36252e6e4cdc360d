/**
 * A TCP proxy on 127.0.0.1 for cutting the network between a process and a server in a
 * test: `cut()` drops every connection through it and refuses new ones, as a network
 * that went away; `heal()` lets new ones through again; `close()` ends it.
 */
import * as Net from "node:net"

export interface TcpProxy {
  readonly port: number
  readonly cut: () => void
  readonly heal: () => void
  readonly close: () => Promise<void>
}

export const startTcpProxy = (target: { readonly host: string; readonly port: number }): Promise<TcpProxy> =>
  new Promise((resolve, reject) => {
    const sockets = new Set<Net.Socket>()
    let open = true
    const server = Net.createServer((client) => {
      if (!open) return client.destroy()
      const upstream = Net.connect(target.port, target.host)
      for (const socket of [client, upstream]) {
        sockets.add(socket)
        socket.on("close", () => sockets.delete(socket))
        socket.on("error", () => {
          client.destroy()
          upstream.destroy()
        })
      }
      client.pipe(upstream)
      upstream.pipe(client)
    })
    server.once("error", reject)
    const cut = () => {
      open = false
      for (const socket of sockets) socket.destroy()
    }
    server.listen(0, "127.0.0.1", () =>
      resolve({
        port: (server.address() as Net.AddressInfo).port,
        cut,
        heal: () => {
          open = true
        },
        close: () =>
          new Promise<void>((done) => {
            cut()
            server.close(() => done())
          })
      })
    )
  })
