#!/usr/bin/env bash
# Builds revision REV of this repository in a git worktree of its own at DIR, for the
# side-by-side bench (test/bench/redesign.ts) to load beside this checkout.
#
# DIR is reused when a stamp in it says it was already built at REV; otherwise it is
# made afresh (`git worktree add --detach`). Its node_modules is a copy of this
# checkout's when every package REV's lockfile pins is here at the same version
# (scripts/lock-subset.mjs; the workspace links stay relative, so they point into DIR),
# else `npm ci` (network to the npm registry). Then `tsc -b` builds the packages' and
# the tests' JavaScript (the server's bundle is not needed).
# Remove it with `git worktree remove --force DIR`.
set -euo pipefail
usage="usage: scripts/ab-baseline.sh REV DIR"
cd "$(dirname "$0")/.."
root=$(pwd)
rev=$(git rev-parse --verify "${1:?$usage}^{commit}")
dir=${2:?$usage}
stamp="$dir/.skein-baseline"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$rev" ]; then
  exit 0
fi
if [ -e "$dir" ]; then
  git worktree remove --force "$dir" 2>/dev/null || rm -rf "$dir"
  git worktree prune
fi
mkdir -p "$(dirname "$dir")"
git worktree add --detach "$dir" "$rev"
cd "$dir"
if node "$root/scripts/lock-subset.mjs" package-lock.json "$root/package-lock.json"; then
  echo "copying this checkout's node_modules into $dir"
  mkdir node_modules
  for entry in "$root"/node_modules/* "$root"/node_modules/.[!.]*; do
    # .cache may hold DIR itself.
    [ -e "$entry" ] && [ "$(basename "$entry")" != .cache ] && cp -a "$entry" node_modules/
  done
else
  npm ci --no-audit --no-fund
fi
npx tsc -b
echo "$rev" >"$stamp"
