/**
 * The dependency rule, checked on the sources: domain imports nothing of ours;
 * adapters and runtime import only domain (runtime never a concrete adapter, never
 * the server); no relative import leaves its package. Both the `import` statements of
 * every source file and each package's declared dependencies are read. Inside runtime,
 * its layers go one way: a source file imports only from its own layer or lower ones.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../../", import.meta.url))

/** Which of our packages each package may import. */
const allowed: Record<string, ReadonlyArray<string>> = {
  domain: [],
  adapters: ["domain"],
  runtime: ["domain"],
  server: ["domain", "adapters", "runtime"]
}

const sourceFiles = (dir: string): Array<string> =>
  Fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = Path.join(dir, entry.name)
    if (entry.isDirectory()) return entry.name === "dist" || entry.name === "node_modules" ? [] : sourceFiles(path)
    return entry.name.endsWith(".ts") ? [path] : []
  })

/** Every module specifier a TypeScript source imports or re-exports (static or dynamic). */
export const specifiers = (source: string): Array<string> => {
  const found: Array<string> = []
  const patterns = [/\b(?:import|export)\s[^'"]*?\bfrom\s*["']([^"']+)["']/g, /\bimport\s*\(\s*["']([^"']+)["']\s*\)/g]
  for (const pattern of patterns) for (const match of source.matchAll(pattern)) found.push(match[1]!)
  return found
}

/**
 * Runtime's layers, bottom to top: storage and generic resources; context arithmetic
 * (and the configuration that names its policy); lineage; actors; then the modules that
 * wire them (Orchestrator, Recovery, Restores, index...).
 */
const runtimeLayers: ReadonlyArray<(path: string) => boolean> = [
  (path) => path.startsWith("store/") || path.startsWith("resources/"),
  (path) => path.startsWith("context/") || path === "RuntimeConfig.ts",
  (path) => path.startsWith("lineage/"),
  (path) => path.startsWith("actors/"),
  () => true
]

/** The layer of a runtime source, by its path under packages/runtime/src. */
export const layerOf = (path: string): number => runtimeLayers.findIndex((inLayer) => inLayer(path))

/** Imports of one runtime source that go to a higher layer than its own. */
export const upwardImports = (file: string, imports: ReadonlyArray<string>): Array<string> => {
  const src = Path.join(root, "packages", "runtime", "src")
  if (!file.startsWith(src + Path.sep)) return []
  const own = layerOf(Path.relative(src, file).split(Path.sep).join("/"))
  const out: Array<string> = []
  for (const spec of imports) {
    if (!spec.startsWith(".")) continue
    const target = Path.resolve(Path.dirname(file), spec).replace(/\.js$/, ".ts")
    if (!target.startsWith(src + Path.sep)) continue
    const layer = layerOf(Path.relative(src, target).split(Path.sep).join("/"))
    if (layer > own) out.push(`${file} imports ${spec}, a higher layer of runtime`)
  }
  return out
}

/** The rule violations of one file of package `pkg`: empty when it keeps the rule. */
export const violations = (pkg: string, file: string, imports: ReadonlyArray<string>): Array<string> => {
  const out: Array<string> = []
  const packageDir = Path.join(root, "packages", pkg)
  for (const spec of imports) {
    const ours = /^@skein\/([^/]+)/.exec(spec)
    if (ours && ours[1] !== pkg && !allowed[pkg]!.includes(ours[1]!)) out.push(`${file} imports ${spec}`)
    if (spec.startsWith(".")) {
      const target = Path.resolve(Path.dirname(file), spec)
      if (!target.startsWith(packageDir + Path.sep)) out.push(`${file} reaches outside its package: ${spec}`)
    }
  }
  return pkg === "runtime" ? [...out, ...upwardImports(file, imports)] : out
}

describe("the dependency rule", () => {
  it("catches what it should (checking the checker)", () => {
    const file = Path.join(root, "packages/runtime/src/x.ts")
    expect(violations("runtime", file, ["@skein/adapters", "@skein/server", "../../adapters/src/a.js"])).toHaveLength(3)
    expect(violations("domain", Path.join(root, "packages/domain/src/x.ts"), ["@skein/runtime"])).toHaveLength(1)
    expect(violations("runtime", file, ["@skein/domain", "./store/EventStore.js", "effect"])).toEqual([])
    const at = (path: string) => Path.join(root, "packages/runtime/src", path)
    expect(violations("runtime", at("store/x.ts"), ["../context/Coverage.js"])).toHaveLength(1)
    expect(violations("runtime", at("lineage/x.ts"), ["../actors/ThreadProtocol.js", "./Git.js"])).toHaveLength(1)
    expect(violations("runtime", at("RuntimeConfig.ts"), ["./actors/ProviderGuard.js"])).toHaveLength(1)
    expect(violations("runtime", at("context/x.ts"), ["../lineage/Lineage.js", "../RuntimeConfig.js"])).toHaveLength(1)
    expect(
      violations("runtime", at("actors/x.ts"), ["../store/EventStore.js", "../lineage/Spawn.js", "../RuntimeConfig.js"])
    ).toEqual([])
    expect(violations("runtime", at("Recovery.ts"), ["./actors/ThreadPlanner.js", "./store/EventStore.js"])).toEqual([])
    expect(violations("runtime", at("resources/x.ts"), ["../store/Sqlite.js"])).toEqual([])
    expect(violations("runtime", at("store/x.ts"), ["../resources/RcRegistry.js", "./Codec.js"])).toEqual([])
    expect(specifiers(`import type { A } from "@skein/x"\nexport * from "./y.js"\nconst m = import("z")`)).toEqual([
      "@skein/x",
      "./y.js",
      "z"
    ])
  })

  for (const pkg of Object.keys(allowed)) {
    it(`${pkg}: its sources and its package.json keep the rule`, () => {
      const dir = Path.join(root, "packages", pkg)
      const files = [...sourceFiles(Path.join(dir, "src")), ...sourceFiles(Path.join(dir, "test"))]
      expect(files.length).toBeGreaterThan(0)
      const broken = files.flatMap((file) => violations(pkg, file, specifiers(Fs.readFileSync(file, "utf8"))))
      expect(broken).toEqual([])
      const manifest = JSON.parse(Fs.readFileSync(Path.join(dir, "package.json"), "utf8")) as {
        readonly dependencies?: Record<string, string>
      }
      const declared = Object.keys(manifest.dependencies ?? {})
        .filter((name) => name.startsWith("@skein/"))
        .map((name) => name.slice("@skein/".length))
      expect(declared.filter((name) => !allowed[pkg]!.includes(name))).toEqual([])
    })
  }
})
