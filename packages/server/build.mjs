/**
 * Builds the `skein` executable as a bundle (after `tsc -b`; `npm run build` runs both),
 * so that a command loads a few files under `dist/bundle/` rather than the compiled
 * CLI's ES modules (over a thousand) one by one, which would be most of its start-up:
 *
 * - `skein.cjs` and `chunks/`: the compiled CLI (`dist/src/bin.js`) and everything it
 *   imports, split by esbuild. The daemon, `stdio` and the demo import the server half
 *   on demand (`Cli.ts`), so the runtime, the adapters and SQLite land in chunks that
 *   `--help`, `call` and the human commands never load. Each output file is then
 *   turned into a script for `src/BundleLoader.ts` (which `bin/skein.js` runs): ES
 *   module syntax becomes `require`s of the other chunks, `import()` of a chunk a
 *   `require` in a promise, `import.meta.url` a parameter.
 * - `*.v8cache`: V8's code cache of each script, written by running the bundled CLI
 *   with `SKEIN_CODE_CACHE=write`: `--help`, a `call` that finds no daemon, and `stdio`
 *   on an empty stdin. It holds the code those runs compiled, so later runs skip
 *   compiling it; a Node with another V8 ignores it (and compiles as usual).
 * - `node_modules/@skein/adapters/scripted-server.js`: the scripted provider's child
 *   program, an entry of its own (an ES module that Node runs directly). The scripted
 *   adapter finds the program by resolving `@skein/adapters/scripted-server` from its
 *   own file, which in the bundle is a chunk here; the small package beside the chunks
 *   answers that resolution with this file.
 * - `../inspector/`: the inspector's page (`inspector/`, Preact), bundled for the browser;
 *   the daemon serves it at `/inspect`.
 * - `meta.json`: which sources went into which file (esbuild's metafile), for the tests
 *   and the bench.
 *
 * better-sqlite3 is native and stays external, loaded from node_modules at run time.
 */
import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import * as esbuild from "esbuild"
import { MODULE_URL_PARAMETER } from "./dist/src/BundleLoader.js"

const root = Path.dirname(fileURLToPath(import.meta.url))
const repository = Path.resolve(root, "..", "..")
const outdir = Path.join(root, "dist", "bundle")
const scriptedPackage = Path.join(outdir, "node_modules", "@skein", "adapters")
const target = "node20"

const common = {
  bundle: true,
  platform: "node",
  format: "esm",
  target,
  // Needed at run time and not bundled: native code, and `ws`'s optional native helpers.
  external: ["better-sqlite3", "bufferutil", "utf-8-validate"],
  metafile: true,
  // meta.json names files relative to the repository, wherever the build runs from.
  absWorkingDir: repository,
  logLevel: "warning"
}

Fs.rmSync(outdir, { recursive: true, force: true })

// ---- the CLI: split ES modules, turned into scripts for BundleLoader ----------------

const cli = await esbuild.build({
  ...common,
  entryPoints: { skein: Path.join(root, "dist", "src", "bin.js") },
  outdir,
  splitting: true,
  chunkNames: "chunks/[name]-[hash]",
  // The chunks import each other by these names; they are scripts, not modules Node loads.
  outExtension: { ".js": ".cjs" },
  write: false
})
for (const output of cli.outputFiles) {
  const script = await esbuild.transform(output.text.replace(/^#!.*\n/, ""), {
    format: "cjs",
    platform: "node",
    target,
    // import("./chunks/X.cjs") → Promise.resolve().then(() => require("./chunks/X.cjs"))
    supported: { "dynamic-import": false },
    define: { "import.meta.url": MODULE_URL_PARAMETER },
    sourcefile: Path.relative(outdir, output.path),
    logLevel: "warning"
  })
  // e.g. an `import.meta` other than `.url`, which would be empty in a script.
  if (script.warnings.length > 0) throw new Error(`${output.path} does not convert to a script cleanly`)
  Fs.mkdirSync(Path.dirname(output.path), { recursive: true })
  Fs.writeFileSync(output.path, script.code)
}

// ---- the inspector's page (Preact), served at /inspect -----------------------------

const inspectorDir = Path.join(root, "dist", "inspector")
Fs.rmSync(inspectorDir, { recursive: true, force: true })
await esbuild.build({
  entryPoints: { app: Path.join(root, "inspector", "main.tsx") },
  outdir: inspectorDir,
  bundle: true,
  minify: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  jsx: "automatic",
  jsxImportSource: "preact",
  absWorkingDir: repository,
  logLevel: "warning"
})
for (const file of ["index.html", "style.css"]) {
  Fs.copyFileSync(Path.join(root, "inspector", file), Path.join(inspectorDir, file))
}

// ---- the scripted provider's child program ----------------------------------------

const scripted = await esbuild.build({
  ...common,
  entryPoints: { "scripted-server": fileURLToPath(import.meta.resolve("@skein/adapters/scripted-server")) },
  outdir: scriptedPackage,
  // CommonJS dependencies call `require`, which an ES module does not have.
  banner: {
    js: 'import { createRequire as __skeinCreateRequire } from "node:module";\nconst require = __skeinCreateRequire(import.meta.url);'
  }
})
Fs.writeFileSync(
  Path.join(scriptedPackage, "package.json"),
  `${JSON.stringify(
    {
      name: "@skein/adapters",
      private: true,
      description: "The scripted provider's child program, bundled for the skein executable (see build.mjs).",
      type: "module",
      exports: { "./scripted-server": "./scripted-server.js" }
    },
    null,
    2
  )}\n`
)

Fs.writeFileSync(
  Path.join(outdir, "meta.json"),
  `${JSON.stringify({
    inputs: { ...cli.metafile.inputs, ...scripted.metafile.inputs },
    outputs: { ...cli.metafile.outputs, ...scripted.metafile.outputs }
  })}\n`
)

// ---- the code cache: run what the commands run --------------------------------------

/** A loopback port nothing listens on (free a moment ago), for a call that finds no daemon. */
const closedPort = await new Promise((resolve, reject) => {
  const server = Net.createServer()
  server.once("error", reject)
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address()
    server.close(() => resolve(port))
  })
})

const bin = Path.join(root, "bin", "skein.js")
const home = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skein-build-"))
try {
  const warmUps = [
    { args: ["--help"], mustSucceed: true },
    { args: ["call", "--url", `ws://127.0.0.1:${closedPort}/rpc`, "provider.list"], mustSucceed: false },
    // The server half: the runtime on a database in the temporary home, until stdin ends.
    { args: ["stdio"], mustSucceed: true }
  ]
  for (const { args, mustSucceed } of warmUps) {
    const run = spawnSync(process.execPath, [bin, ...args], {
      env: { PATH: process.env.PATH ?? "", HOME: home, SKEIN_HOME: home, SKEIN_CODE_CACHE: "write" },
      input: "",
      encoding: "utf8",
      timeout: 60_000
    })
    if (run.error !== undefined) throw run.error
    if (mustSucceed && run.status !== 0) {
      throw new Error(`the bundled \`skein ${args.join(" ")}\` failed (${run.signal ?? run.status}): ${run.stderr}`)
    }
  }
} finally {
  Fs.rmSync(home, { recursive: true, force: true })
}

const files = Fs.readdirSync(outdir, { recursive: true }).map((file) => Path.join(outdir, String(file)))
const size = (suffix) =>
  files.filter((file) => file.endsWith(suffix)).reduce((sum, file) => sum + Fs.statSync(file).size, 0)
const mib = (bytes) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`
console.log(
  `skein bundle: ${files.filter((file) => file.endsWith(".cjs")).length} scripts, ${mib(size(".cjs"))}; code cache ${mib(size(".v8cache"))}; in ${Path.relative(process.cwd(), outdir) || "."}`
)
