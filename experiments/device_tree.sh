#!/usr/bin/env bash
# What a device call sends: the working tree (tracked and untracked-not-ignored files) plus
# the carried paths, 64 MiB in all. The recorded results (experiments/results, ~24 MB) are
# not needed there and leave the tree too close to the limit for grain's wheels, so a GPU
# session hides them from git for its calls and shows them again after; nothing is deleted.
#
#   bash experiments/device_tree.sh size    # MiB that would travel now (+ .whl if present)
#   bash experiments/device_tree.sh hide    # before the device calls
#   bash experiments/device_tree.sh show    # after them (also after a session that stopped)
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
results=experiments/results
exclude=$(git rev-parse --git-path info/exclude)
size() {
  { git ls-files -z; git ls-files -z --others --exclude-standard; } \
    | xargs -0 -r du -cb 2>/dev/null | awk '$2 == "total" {s += $1} END {print s + 0}'
}
report() {
  local tree whl
  tree=$(size)
  whl=$( (du -cb .whl 2>/dev/null || echo "0 total") | awk '$2 == "total" {print $1}')
  awk -v t="$tree" -v w="$whl" 'BEGIN {printf "tree %.1f MiB + .whl %.1f MiB = %.1f MiB of 64\n", t / 2^20, w / 2^20, (t + w) / 2^20}'
}
case "${1:-size}" in
  size) report ;;
  hide)
    git rm -r -q --cached "$results"
    mkdir -p "$(dirname "$exclude")"
    grep -qxF "/$results/" "$exclude" 2>/dev/null || echo "/$results/" >> "$exclude"
    echo "hidden: $results; commit nothing until \`bash $0 show\` brings it back"; report
    ;;
  show)
    [ ! -f "$exclude" ] || sed -i "\#^/$results/\$#d" "$exclude"
    git reset -q -- "$results"
    echo "shown: $results"; git status --short -- "$results" | head -5
    ;;
  *) echo "usage: $0 size|hide|show" >&2; exit 2 ;;
esac
