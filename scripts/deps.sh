#!/usr/bin/env bash
# Installs the Debian packages comex needs to build, test and demo, when any
# is missing. Needs root (or sudo) only when something must be installed.
set -euo pipefail
pkgs=(cmake ninja-build pkg-config gcc clang libclang-rt-14-dev libucx-dev libmimalloc-dev libxxhash-dev libssl-dev python3 sqlite3 redis-server redis-tools python3-numpy python3-matplotlib stress-ng curl python3-prometheus-client dpkg-dev nodejs default-jdk-headless ruby lua5.4 luajit rustc golang-go gdb libpython3.11-testsuite munge slurmctld slurmd slurm-client slurm-wlm-basic-plugins)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "comex: installing missing packages: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "comex: need root to install ${missing[*]}; run: apt-get install ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
# Packages with daemons (redis-server, munge, slurmctld, slurmd) must not
# start them system-wide when installed: the tests start their own. A
# policy-rc.d that says 101 (action forbidden) stops invoke-rc.d from doing so;
# it is created only when missing, and only the one created here is removed.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  $sudo sh -c 'printf "#!/bin/sh\n# comex scripts/deps.sh: no daemon starts while packages install\nexit 101\n" >"$1" && chmod 755 "$1"' sh "$policy"
  trap '$sudo rm -f "$policy"' EXIT
fi
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
