/**
 * The store's SQL, checked on the sources for what the oldest PostgreSQL Skein runs on
 * refuses while SQLite and newer PostgreSQL accept it (the tests' own server is
 * PostgreSQL 18): a subquery in FROM or JOIN without an alias, which PostgreSQL before
 * 16 rejects ("subquery in FROM must have an alias"), so a thread could not be loaded.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../../packages/", import.meta.url))

const sourceFiles = (dir: string): Array<string> =>
  Fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = Path.join(dir, entry.name)
    if (entry.isDirectory()) return entry.name === "dist" || entry.name === "node_modules" ? [] : sourceFiles(path)
    return entry.name.endsWith(".ts") ? [path] : []
  })

/** What may follow a subquery's closing parenthesis when it has no alias. */
const NOT_AN_ALIAS =
  /^(?:UNION|EXCEPT|INTERSECT|WHERE|GROUP|ORDER|LIMIT|OFFSET|ON|USING|JOIN|LEFT|RIGHT|INNER|CROSS)\b/i

/** The subqueries in FROM or JOIN of `source` that no alias follows, each as its first line. */
const unaliasedSubqueries = (source: string): Array<string> => {
  const found: Array<string> = []
  for (const match of source.matchAll(/\b(?:FROM|JOIN)\s*\(\s*SELECT\b/gi)) {
    let depth = 0
    let end = -1
    for (let i = source.indexOf("(", match.index); i < source.length; i++) {
      if (source[i] === "(") depth++
      else if (source[i] === ")" && --depth === 0) {
        end = i
        break
      }
    }
    const after = source.slice(end + 1).trimStart()
    if (end < 0 || !/^(?:AS\s+)?[A-Za-z_]\w*/i.test(after) || NOT_AN_ALIAS.test(after)) {
      found.push(source.slice(match.index, source.indexOf("\n", match.index)).trim())
    }
  }
  return found
}

describe("the store's SQL on PostgreSQL before 16", () => {
  it("finds a subquery without an alias, and none with one", () => {
    expect(unaliasedSubqueries("SELECT MAX(n) FROM (SELECT n FROM t) GROUP BY n")).toHaveLength(1)
    expect(unaliasedSubqueries("SELECT * FROM (SELECT n FROM t WHERE (a)) UNION SELECT 1")).toHaveLength(1)
    expect(unaliasedSubqueries("x JOIN (SELECT n FROM t) ON true")).toHaveLength(1)
    expect(unaliasedSubqueries("SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM t) AS counted GROUP BY n")).toEqual([])
    expect(unaliasedSubqueries("x JOIN (SELECT n FROM t) picked ON true")).toEqual([])
  })

  it("gives every subquery in FROM or JOIN an alias", () => {
    const offending = ["runtime", "server"].flatMap((pkg) =>
      sourceFiles(Path.join(root, pkg, "src")).flatMap((file) =>
        unaliasedSubqueries(Fs.readFileSync(file, "utf8")).map((line) => `${Path.relative(root, file)}: ${line}`)
      )
    )
    expect(offending).toEqual([])
  })
})
