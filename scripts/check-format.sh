#!/usr/bin/env bash
# Fails if any C file differs from clang-format's layout (.clang-format).
set -euo pipefail
command -v clang-format >/dev/null || { echo "check-format: clang-format not installed, skipped"; exit 0; }
bad=$(find src tests bench -name '*.[ch]' -print0 | xargs -0 clang-format --dry-run 2>&1 | grep -c warning || true)
if [ "$bad" != "0" ]; then
  echo "check-format: $bad formatting differences; run 'make format'" >&2
  exit 1
fi
echo "check-format: all C files formatted"
