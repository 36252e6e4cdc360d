#!/usr/bin/env node
// The `skein` command. A committed file, so that `npm ci` links it before anything is
// built; it runs the bundle that `npm run build` makes (packages/server/build.mjs).
import { fileURLToPath } from "node:url"
import { runBundle } from "../dist/src/BundleLoader.js"

runBundle(fileURLToPath(new URL("../dist/bundle/skein.cjs", import.meta.url)))
