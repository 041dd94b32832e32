#!/usr/bin/env bash
# Installs the coding agents the slow tests drive (tests/cast/test_handoff_agents.py,
# tests/csum/serve/test_serve_agents.py) into a cache folder: $CHAINCAST_AGENTS_DIR, default
# ~/.cache/chaincast-agents, where the tests look too. Versions are pinned: docs/handoff.md
# and docs/serve.md record what these versions send. Claude Code, Codex CLI and opencode
# come from npm (node_modules/.bin/), aider from PyPI into a virtual environment of its
# own (aider/bin/aider: it pins many dependencies, never into the project's environment).
# Fresh: 1.3 to 2.7 min on this 2-core machine (npm about 10 s per package from a warm npm
# cache; aider's pip install the rest); once installed, a run checks the versions in 5 s.
# Always exits 0: what fails to install is said here, and its tests skip saying why.
set -uo pipefail
dir="${CHAINCAST_AGENTS_DIR:-$HOME/.cache/chaincast-agents}"
claude_code="@anthropic-ai/claude-code@2.1.197"
codex="@openai/codex@0.171.0"
opencode="opencode-ai@1.18.33"
aider="aider-chat==0.86.2"
mkdir -p "$dir" || { echo "agents.sh: cannot create $dir; the real-agent tests will skip" >&2; exit 0; }

# $1: the CLI under node_modules/.bin, $2: its pinned version
has() { "$dir/node_modules/.bin/$1" --version 2>/dev/null | grep -qF "$2"; }

if ! command -v npm >/dev/null; then
  echo "agents.sh: npm not found; the Claude Code, Codex and opencode tests will skip" >&2
elif has claude "${claude_code##*@}" && has codex "${codex##*@}" && has opencode "${opencode##*@}"; then
  echo "agents.sh: $claude_code, $codex and $opencode already in $dir"
elif npm install --silent --no-audit --no-fund --prefix "$dir" "$claude_code" "$codex" "$opencode"; then
  for cli in claude codex opencode; do echo "$cli $("$dir/node_modules/.bin/$cli" --version)"; done
else
  echo "agents.sh: npm install failed; the tests of what is missing will skip" >&2
fi

venv="$dir/aider"
if "$venv/bin/aider" --version 2>/dev/null | grep -qF "${aider##*==}"; then
  echo "agents.sh: $aider already in $venv"
elif python3 -m venv --clear "$venv" \
  && "$venv/bin/python" -m pip install -q --disable-pip-version-check "$aider"; then
  "$venv/bin/aider" --version
else
  echo "agents.sh: installing $aider failed; the aider test will skip" >&2
fi
exit 0
