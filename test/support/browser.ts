/**
 * A headless Chromium for the browser tests, found without any system package:
 * Debian's `chromium` where it is installed (`/usr/bin/chromium`, else `chromium` on
 * PATH), else the build `@sparticuz/chromium` ships in the npm registry (unpacked into
 * the temp directory on first use). playwright-core drives either.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { type Browser, chromium } from "playwright-core"

const isExecutableFile = (path: string): boolean => {
  try {
    Fs.accessSync(path, Fs.constants.X_OK)
    return Fs.statSync(path).isFile()
  } catch {
    return false
  }
}

/** A system Chromium: `/usr/bin/chromium`, else the first `chromium` on PATH. */
export const systemChromium = (env: Readonly<Record<string, string | undefined>> = process.env): string | undefined =>
  [
    "/usr/bin/chromium",
    ...(env["PATH"] ?? "")
      .split(Path.delimiter)
      .filter((dir) => dir !== "")
      .map((dir) => Path.join(dir, "chromium"))
  ].find(isExecutableFile)

let packaged: Promise<string> | undefined

/** The Chromium to drive: the system's, else the packaged one (unpacked once per process). */
export const chromiumExecutable = (): Promise<string> => {
  const system = systemChromium()
  if (system !== undefined) return Promise.resolve(system)
  packaged ??= import("@sparticuz/chromium").then((module) => module.default.executablePath())
  return packaged
}

/**
 * Runs `use` with a headless Chromium of a fresh profile, closed afterwards whatever
 * happened (playwright-core ends the browser's processes).
 */
export const withChromium = async <A>(use: (browser: Browser) => Promise<A>): Promise<A> => {
  const browser = await chromium.launch({ executablePath: await chromiumExecutable(), headless: true, timeout: 30_000 })
  try {
    return await use(browser)
  } finally {
    await browser.close()
  }
}
