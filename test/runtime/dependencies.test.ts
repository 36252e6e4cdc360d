/**
 * The dependency rule, checked on the sources: domain imports nothing of ours;
 * adapters and runtime import only domain (runtime never a concrete adapter, never
 * the server); no relative import leaves its package. Both the `import` statements of
 * every source file and each package's declared dependencies are read.
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
  return out
}

describe("the dependency rule", () => {
  it("catches what it should (checking the checker)", () => {
    const file = Path.join(root, "packages/runtime/src/x.ts")
    expect(violations("runtime", file, ["@skein/adapters", "@skein/server", "../../adapters/src/a.js"])).toHaveLength(3)
    expect(violations("domain", Path.join(root, "packages/domain/src/x.ts"), ["@skein/runtime"])).toHaveLength(1)
    expect(violations("runtime", file, ["@skein/domain", "./store/EventStore.js", "effect"])).toEqual([])
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
