#!/usr/bin/env bash
# Builds revision REV of this repository in a worktree of its own at DIR, for
# test/bench/agentsAb.ts to run beside this checkout (a change to the run path judged
# against the code before it, in one process). Remove it afterwards with
# `git worktree remove --force DIR`.
set -euo pipefail
usage="usage: scripts/ab-baseline.sh REV DIR"
rev=${1:?$usage}
dir=${2:?$usage}
cd "$(dirname "$0")/.."
git worktree add --detach "$dir" "$rev"
cd "$dir"
npm ci --no-audit --no-fund
# The packages' and the tests' JavaScript (the server's bundle is not needed).
npx tsc -b
