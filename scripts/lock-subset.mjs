#!/usr/bin/env node
// Usage: node scripts/lock-subset.mjs SUBSET_LOCK SUPERSET_LOCK
// Exits 0 when every package SUBSET_LOCK installs (each `node_modules/...` entry of an
// npm lockfile) is in SUPERSET_LOCK at the same version, so a copy of the node_modules
// installed from SUPERSET_LOCK serves SUBSET_LOCK's checkout too (scripts/ab-baseline.sh
// copies instead of running `npm ci` then). Otherwise prints the first differences and
// exits 1.
import { readFileSync } from "node:fs"

const [subsetFile, supersetFile] = process.argv.slice(2)
if (subsetFile === undefined || supersetFile === undefined) {
  console.error("usage: node scripts/lock-subset.mjs SUBSET_LOCK SUPERSET_LOCK")
  process.exit(2)
}
const packagesOf = (file) => JSON.parse(readFileSync(file, "utf8")).packages ?? {}
const subset = packagesOf(subsetFile)
const superset = packagesOf(supersetFile)
const differences = Object.entries(subset)
  .filter(([path]) => path.startsWith("node_modules/"))
  .filter(([path, entry]) => superset[path]?.version !== entry.version)
  .map(([path, entry]) => `${path}: ${entry.version} there, ${superset[path]?.version ?? "absent"} here`)
if (differences.length > 0) {
  console.error(`${subsetFile} pins packages ${supersetFile} does not:\n  ${differences.slice(0, 10).join("\n  ")}`)
  process.exit(1)
}
