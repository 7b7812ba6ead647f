#!/usr/bin/env bash
# System packages tcompile needs: Graphviz's `dot` (FX graph diagrams) and Chromium (browser tests).
set -euo pipefail
missing=()
command -v dot >/dev/null || missing+=(graphviz)
command -v chromium >/dev/null || missing+=(chromium)
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "installing system packages: ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" fonts-dejavu-core >/dev/null
