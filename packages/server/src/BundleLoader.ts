/**
 * Runs the bundled `skein` executable (`bin/skein.js` calls `runBundle`; `build.mjs`
 * makes the bundle) with V8's code cache.
 *
 * The bundle is esbuild's code-split output: an entry script, the chunks every command
 * needs, and the chunks that only `daemon`, `stdio` and `demo` load (the runtime, the
 * adapters, SQLite). Node 20 keeps no compiled code between runs of ES modules
 * (`module.enableCompileCache` arrived in Node 22), and compiling the megabytes a client
 * command needs is a large part of its start-up. So the build turns each output file
 * into a script, a CommonJS-shaped function body that `require`s the chunks it imports
 * (a dynamic `import()` of a chunk becomes a `require` in a promise), and this loader
 * compiles each script the first time something requires it, with the code cache the
 * build wrote beside it (`FILE.v8cache`). V8 checks that a cache was made by the same V8
 * with the same flags and otherwise compiles the script as usual; a cache older than
 * its script is not used.
 *
 * The scripts run in strict mode, as the ES modules they were.
 *
 * `SKEIN_CODE_CACHE=off` ignores the caches; `SKEIN_CODE_CACHE=write` writes a cache for
 * every script loaded when the process exits (the build runs the CLI that way).
 * `SKEIN_TRACE_LOADING=FILE` writes, at exit, which scripts were loaded and with what
 * cache, and every CommonJS module Node loaded (tests and the bench read it).
 */
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import * as Vm from "node:vm"

/** What a script's `import.meta.url` became in the build: a parameter of its function. */
export const MODULE_URL_PARAMETER = "__skeinModuleUrl"

/** The function every script's code is the body of (the build does not add it). */
const HEAD = `(function (exports, require, module, __filename, __dirname, ${MODULE_URL_PARAMETER}) {"use strict";`
const TAIL = "\n})"

export const CACHE_SUFFIX = ".v8cache"

/** `used`: V8 took the cache; `rejected`: V8 refused it (another V8, other flags); `none`: no usable cache file. */
export type CacheUse = "used" | "rejected" | "none" | "off"

export interface LoadedScript {
  readonly file: string
  readonly cache: CacheUse
}

/** What `SKEIN_TRACE_LOADING` writes. */
export interface LoadingTrace {
  readonly scripts: ReadonlyArray<LoadedScript>
  /** Files of the CommonJS modules Node loaded (externals such as better-sqlite3). */
  readonly commonJs: ReadonlyArray<string>
}

type ScriptFunction = (
  exports: unknown,
  require: NodeJS.Require,
  module: { exports: unknown },
  filename: string,
  dirname: string,
  moduleUrl: string
) => void

/** The cache for `file`, unless missing, older than the script, or turned off. */
const readCache = (file: string, mode: string | undefined): Buffer | undefined => {
  if (mode === "off") return undefined
  try {
    const cache = `${file}${CACHE_SUFFIX}`
    if (Fs.statSync(cache).mtimeMs < Fs.statSync(file).mtimeMs) return undefined
    return Fs.readFileSync(cache)
  } catch {
    return undefined
  }
}

/** Writes a file whole or not at all (another process may be reading it). */
const writeAtomically = (file: string, data: Uint8Array) => {
  const temp = `${file}.${process.pid}.tmp`
  Fs.writeFileSync(temp, data)
  Fs.renameSync(temp, file)
}

/** Loads the bundle's entry script (and, on demand, its chunks) and runs it. */
export const runBundle = (entryPath: string, env: NodeJS.ProcessEnv = process.env): void => {
  const entry = Path.resolve(entryPath)
  if (!Fs.existsSync(entry)) {
    process.stderr.write(`skein: ${entry} is missing; build the bundle with \`npm run build\`.\n`)
    process.exit(1)
  }
  const mode = env["SKEIN_CODE_CACHE"]
  const modules = new Map<string, { exports: unknown }>()
  const loaded: Array<{ readonly file: string; readonly cache: CacheUse; readonly script: Vm.Script }> = []

  const requireFrom = (file: string): NodeJS.Require => {
    const nodeRequire = createRequire(file)
    const dir = Path.dirname(file)
    // The build's scripts require each other by relative path, ending in .cjs; anything
    // else (node: builtins, better-sqlite3) is Node's.
    const require = (id: string): unknown =>
      (id.startsWith("./") || id.startsWith("../")) && id.endsWith(".cjs")
        ? load(Path.resolve(dir, id))
        : nodeRequire(id)
    return Object.assign(require, {
      resolve: nodeRequire.resolve,
      cache: nodeRequire.cache,
      extensions: nodeRequire.extensions,
      main: nodeRequire.main
    }) as NodeJS.Require
  }

  const load = (file: string): unknown => {
    const known = modules.get(file)
    if (known !== undefined) return known.exports
    const module = { exports: {} as unknown }
    modules.set(file, module)
    const cachedData = readCache(file, mode)
    const script = new Vm.Script(`${HEAD}${Fs.readFileSync(file, "utf8")}${TAIL}`, {
      filename: file,
      ...(cachedData === undefined ? {} : { cachedData }),
      // The scripts import nothing dynamically any more; anything else would get Node's loader.
      importModuleDynamically: Vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER
    })
    const cache: CacheUse =
      mode === "off" ? "off" : cachedData === undefined ? "none" : script.cachedDataRejected ? "rejected" : "used"
    loaded.push({ file, cache, script })
    const run = script.runInThisContext() as ScriptFunction
    run.call(undefined, module.exports, requireFrom(file), module, file, Path.dirname(file), pathToFileURL(file).href)
    return module.exports
  }

  const trace = env["SKEIN_TRACE_LOADING"]
  if (mode === "write" || (trace !== undefined && trace !== "")) {
    process.on("exit", () => {
      if (mode === "write") {
        for (const { file, script } of loaded) {
          try {
            writeAtomically(`${file}${CACHE_SUFFIX}`, script.createCachedData())
          } catch (error) {
            process.stderr.write(`skein: cannot write the code cache of ${file}: ${String(error)}\n`)
          }
        }
      }
      if (trace !== undefined && trace !== "") {
        const report: LoadingTrace = {
          scripts: loaded.map(({ file, cache }) => ({ file, cache })),
          commonJs: Object.keys(createRequire(entry).cache)
        }
        Fs.writeFileSync(trace, `${JSON.stringify(report)}\n`)
      }
    })
  }

  load(entry)
}
