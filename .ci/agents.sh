#!/usr/bin/env bash
# Installs the coding-agent CLIs the slow handoff tests drive (tests/cast/test_handoff_agents.py)
# into a cache folder: $CHAINCAST_AGENTS_DIR, default ~/.cache/chaincast-agents. The tests
# look there too. Versions are pinned: docs/handoff.md records what these versions read.
# Exits 0 without installing when npm is missing (the tests then skip, saying why).
set -euo pipefail
dir="${CHAINCAST_AGENTS_DIR:-$HOME/.cache/chaincast-agents}"
claude_code="@anthropic-ai/claude-code@2.1.197"
codex="@openai/codex@0.171.0"
if ! command -v npm >/dev/null; then
  echo "agents.sh: npm not found; the real-agent tests will skip" >&2
  exit 0
fi
if [ -x "$dir/node_modules/.bin/claude" ] && [ -x "$dir/node_modules/.bin/codex" ] \
  && "$dir/node_modules/.bin/claude" --version 2>/dev/null | grep -q "${claude_code##*@}" \
  && "$dir/node_modules/.bin/codex" --version 2>/dev/null | grep -q "${codex##*@}"; then
  echo "agents.sh: $claude_code and $codex already in $dir"
  exit 0
fi
mkdir -p "$dir"
npm install --silent --no-audit --no-fund --prefix "$dir" "$claude_code" "$codex"
"$dir/node_modules/.bin/claude" --version
"$dir/node_modules/.bin/codex" --version
