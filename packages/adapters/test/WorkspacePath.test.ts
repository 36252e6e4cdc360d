import { describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { containedPath } from "../src/workspace/WorkspacePath.js"

const scratch = () => {
  const base = Fs.realpathSync(Fs.mkdtempSync(Path.join(Os.tmpdir(), "skein-ws-")))
  const workspace = Path.join(base, "ws")
  const outside = Path.join(base, "outside")
  Fs.mkdirSync(Path.join(workspace, "sub"), { recursive: true })
  Fs.mkdirSync(outside)
  Fs.writeFileSync(Path.join(outside, "secret.txt"), "keep")
  Fs.symlinkSync(outside, Path.join(workspace, "escape"))
  Fs.symlinkSync(Path.join(outside, "secret.txt"), Path.join(workspace, "link.txt"))
  Fs.symlinkSync(Path.join(workspace, "sub"), Path.join(workspace, "alias"))
  return { base, workspace, outside }
}

describe("containedPath", () => {
  it("refuses absolute paths, climbs out with .., and symlinks that lead out", () => {
    const { base, outside, workspace } = scratch()
    try {
      for (const path of [
        Path.join(outside, "x"),
        "../outside/x",
        "sub/../../outside/x",
        "..",
        ".",
        "escape/x",
        "escape/new/dir/x",
        "link.txt"
      ]) {
        expect(containedPath(workspace, path), path).toMatchObject({ _tag: "Refused" })
      }
      expect(Fs.readdirSync(outside)).toEqual(["secret.txt"])
    } finally {
      Fs.rmSync(base, { recursive: true, force: true })
    }
  })

  it("allows names inside, names that merely start with dots, and symlinks that stay inside", () => {
    const { base, workspace } = scratch()
    try {
      expect(containedPath(workspace, "..foo")).toMatchObject({ _tag: "Inside", relative: "..foo" })
      expect(containedPath(workspace, "a/b/c.txt")).toMatchObject({ _tag: "Inside", relative: "a/b/c.txt" })
      expect(containedPath(workspace, "sub/../d.txt")).toMatchObject({ _tag: "Inside", relative: "d.txt" })
      expect(containedPath(workspace, "alias/e.txt")).toMatchObject({
        _tag: "Inside",
        target: Path.join(workspace, "alias", "e.txt")
      })
      // A workspace given through a symlink is judged by its real path.
      Fs.symlinkSync(workspace, Path.join(base, "ws-link"))
      expect(containedPath(Path.join(base, "ws-link"), "f.txt")).toMatchObject({
        _tag: "Inside",
        target: Path.join(workspace, "f.txt")
      })
      expect(containedPath(Path.join(base, "missing"), "f.txt")).toMatchObject({ _tag: "Refused" })
    } finally {
      Fs.rmSync(base, { recursive: true, force: true })
    }
  })
})
