#!/usr/bin/env node
// The `skein` command. A committed file, so that `npm ci` links it before anything is
// built; the CLI itself is compiled TypeScript (`npm run build`).
import "../dist/src/bin.js"
