/**
 * Workspaces are confined: thread.create takes only an absolute path to an existing
 * directory (stored as its real path), never the filesystem root or the home
 * directory itself, and inside the configured roots when there are some; a refused
 * workspace writes nothing. During runs, every path the scripted provider is asked to
 * write is judged against the real workspace: absolute paths, `..` and symlinks that
 * lead out are refused as `write_rejected` items and write nothing outside.
 */
import type { ProviderName } from "@skein/domain"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { inTempRuntime } from "../support/runtime.js"

const alpha = "alpha" as ProviderName

const layout = (dir: string) => {
  const base = Fs.realpathSync(dir)
  const roots = Path.join(base, "projects")
  const project = Path.join(roots, "app")
  const outside = Path.join(base, "outside")
  Fs.mkdirSync(project, { recursive: true })
  Fs.mkdirSync(outside)
  Fs.writeFileSync(Path.join(outside, "keep.txt"), "untouched")
  Fs.writeFileSync(Path.join(base, "plain-file"), "")
  Fs.symlinkSync(outside, Path.join(project, "escape"))
  Fs.symlinkSync(project, Path.join(base, "app-link"))
  Fs.symlinkSync(outside, Path.join(roots, "sneaky"))
  return { base, roots, project, outside }
}

describe("workspaces", () => {
  it("thread.create refuses what is not a project directory, with typed errors, writing nothing", async () => {
    await inTempRuntime(
      (o, _actors, dir) =>
        Effect.gen(function* () {
          const { base, outside, project } = layout(dir)
          const refused = [
            "relative/dir",
            ".",
            Path.join(base, "missing"),
            Path.join(base, "plain-file"),
            "/",
            Os.homedir(),
            outside // outside the configured roots
          ]
          for (const workspace of refused) {
            const result = yield* Effect.either(o.createThread({ workspace }))
            expect(Either.isLeft(result) && result.left, workspace).toMatchObject({
              _tag: "InvalidWorkspace",
              workspace
            })
          }
          // A host in plain JavaScript passing what is not a string is refused by the
          // method's schema, as an RPC client would be (test/runtime/input.test.ts).
          for (const workspace of [null, 42, { path: base }] as Array<unknown>) {
            const result = yield* Effect.either(o.createThread({ workspace: workspace as string }))
            expect(Either.isLeft(result) && result.left._tag, String(workspace)).toBe("InvalidInput")
          }
          // A symlink that lives inside the roots but leads out of them is judged by where it leads.
          const sneaky = yield* Effect.either(o.createThread({ workspace: Path.join(base, "projects", "sneaky") }))
          expect(Either.isLeft(sneaky) && sneaky.left._tag).toBe("InvalidWorkspace")
          expect(yield* o.listThreads({})).toEqual([])
          // Accepted, and stored as its real path.
          const viaLink = yield* o.createThread({ workspace: Path.join(base, "app-link") })
          expect(viaLink.workspace).toBe(project)
        }),
      (dir) => ({ workspaceRoots: [Path.join(Fs.realpathSync(dir), "projects")] })
    )
  })

  it("a run cannot write outside its workspace: absolute, .., symlinks are refused; ..foo is a name", async () => {
    await inTempRuntime((o, _actors, dir) =>
      Effect.gen(function* () {
        const { outside, project } = layout(dir)
        const thread = yield* o.createThread({ workspace: project })
        const run = yield* o.startRun({
          threadId: thread.id,
          provider: alpha,
          message:
            `[[write:${Path.join(outside, "abs.txt")}:x]] [[write:../outside/dots.txt:x]] ` +
            "[[write:escape/through-link.txt:x]] [[write:escape:x]] [[write:..foo:fine]] [[write:src/ok.txt:fine]]",
          wait: true
        })
        expect(run.status).toBe("completed")
        const rejected = run.items.filter((i) => i.type === "error" && i.code === "write_rejected")
        expect(rejected).toHaveLength(4)
        const written = run.items.flatMap((i) => (i.type === "file_change" ? [i.path] : []))
        expect(written).toEqual(["..foo", "src/ok.txt"])
        expect(Fs.readdirSync(outside)).toEqual(["keep.txt"])
        expect(Fs.readFileSync(Path.join(outside, "keep.txt"), "utf8")).toBe("untouched")
        expect(Fs.readFileSync(Path.join(project, "..foo"), "utf8")).toBe("fine")
      })
    )
  })
})
