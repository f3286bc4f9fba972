#!/usr/bin/env bash
# Install the system tools Tessera's recording and its tests need, from
# Debian's packages, only where a tool is missing (so it is quick and
# idempotent). Run by .ci/run; safe to run by hand.
#
#   valgrind      tessera trace record --backend lackey
#   qemu-user     tessera trace record --backend qemu (qemu-x86_64, built with plugin support)
#   gcc, libc6-dev   building the QEMU plugin, and the static test programs in tests/data
#   xz-utils      extracting qemu-plugin.h from Debian's qemu source (apt-get source)
#
# Tessera itself never installs anything: a missing tool is an error telling
# how to install it. This script is the project's explicit install step.
set -euo pipefail

need=()
command -v valgrind >/dev/null 2>&1 || need+=(valgrind)
command -v qemu-x86_64 >/dev/null 2>&1 || need+=(qemu-user)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
# The static C library, for `gcc -static` (test programs).
[ -e /usr/lib/x86_64-linux-gnu/libc.a ] || [ -n "$(gcc -print-file-name=libc.a 2>/dev/null | grep /)" ] || need+=(libc6-dev)
command -v xz >/dev/null 2>&1 || need+=(xz-utils)

if [ "${#need[@]}" -eq 0 ]; then
  echo "system dependencies: all present"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "missing: ${need[*]}; install them with your package manager (this script knows apt-get only)" >&2
  exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo=(sudo)
  else
    echo "missing: ${need[*]}; run as root or install sudo" >&2
    exit 1
  fi
fi
echo "installing: ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}"
