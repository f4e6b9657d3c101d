#!/usr/bin/env bash
# The Debian packages, as an operator gets them (test.sh runs this after the RelWithDebInfo suite):
#   1. CPack builds switchyard-server, -agent, -client and python3-switchyard from BUILD (configured with
#      -DCMAKE_INSTALL_PREFIX=/usr); lintian reports no error in any of them;
#   2. `apt-get install ./*.deb` installs them (their dependencies are Debian 12's own packages);
#   3. the installed programs answer --version, their manual pages and bash completion are there, and
#      `systemd-analyze verify` accepts both units (and `systemd-analyze security` rates their sandbox);
#   4. the installed yardd, started as its unit starts it (user switchyard, /etc/switchyard/yardd.conf; on a
#      temporary state directory and port 0), tells the service manager READY=1 over $NOTIFY_SOCKET, and the
#      installed yardctl and Python client compose, list and decompose against it;
#   5. `apt-get purge` removes them and leaves the machine as it was (no user, no state, no unit links).
# Usage: tests/packaging/check_packages.sh BUILD   (root, or sudo without a password)
set -euo pipefail
build=$(cd "${1:?usage: check_packages.sh BUILD}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo -n"
packages=(switchyard-server switchyard-agent switchyard-client python3-switchyard)
say() { echo "== packages: $*"; }

say "building with CPack"
rm -rf "$build/packages"
(cd "$build" && cpack -G DEB > "$build/cpack.log" 2>&1) || { cat "$build/cpack.log"; exit 1; }
mapfile -t debs < <(ls "$build"/packages/*.deb)
[ ${#debs[@]} -eq 4 ] || { echo "expected 4 packages, got: ${debs[*]}"; exit 1; }
for deb in "${debs[@]}"; do
  echo "   $(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version) $(dpkg-deb -f "$deb" Architecture): $(du -h "$deb" | cut -f1); Depends: $(dpkg-deb -f "$deb" Depends)"
done

say "lintian"
# --fail-on error: warnings are printed for the record, errors fail the check.
lintian --fail-on error --no-tag-display-limit "${debs[@]}"

for p in "${packages[@]}"; do
  if dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q "install ok installed"; then
    echo "$p is already installed on this machine: refusing to install and purge over it"; exit 1
  fi
done
had_user=no; getent passwd switchyard > /dev/null && had_user=yes
before=$(mktemp)
{ ls /etc/systemd/system/multi-user.target.wants 2> /dev/null; ls -d /etc/switchyard /var/lib/switchyard 2> /dev/null; } > "$before" || true

scratch=$(mktemp -d)
cleanup() {
  [ -n "${yardd_pid:-}" ] && kill "$yardd_pid" 2> /dev/null && wait "$yardd_pid" 2> /dev/null
  $SUDO apt-get purge -y -qq "${packages[@]}" > /dev/null 2>&1 || true
  rm -rf "$scratch"
}
trap cleanup EXIT

say "apt-get install ./*.deb"
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${debs[@]}" > "$scratch/apt.log" 2>&1 \
  || { cat "$scratch/apt.log"; exit 1; }
getent passwd switchyard > /dev/null || { echo "the server package made no switchyard user"; exit 1; }
[ "$(stat -c %U /var/lib/switchyard)" = switchyard ] || { echo "/var/lib/switchyard is not switchyard's"; exit 1; }
dpkg-query -W -f='${Conffiles}\n' switchyard-server | grep -q /etc/switchyard/yardd.conf || { echo "yardd.conf is no conffile"; exit 1; }

say "installed programs, manual pages, completion, units"
for program in yardd yardctl yard-agent; do
  version=$(/usr/bin/$program --version)
  echo "   $version"
  [[ $version == "$program "* ]] || { echo "$program --version said '$version'"; exit 1; }
  man -w "$program" > /dev/null || { echo "no manual page for $program"; exit 1; }
done
[ -f /usr/share/bash-completion/completions/yardctl ] || { echo "no bash completion for yardctl"; exit 1; }
bash -c 'source /usr/share/bash-completion/bash_completion 2>/dev/null; source /usr/share/bash-completion/completions/yardctl;
         COMP_WORDS=(yardctl comp); COMP_CWORD=1; COMP_LINE="yardctl comp"; COMP_POINT=${#COMP_LINE}; _yardctl;
         [[ " ${COMPREPLY[*]} " == *" compose "* ]]' || { echo "bash completion does not complete 'yardctl comp'"; exit 1; }
ls /usr/share/switchyard/monitoring/switchyard-dashboard.json /usr/lib/switchyard/slurm/switchyard-resume > /dev/null
# The operator's documents and the Python client's examples (issue 63, item 7).
ls /usr/share/doc/switchyard-server/{operations,security,switchtec,kubernetes}.md \
   /usr/share/doc/python3-switchyard/examples/compose_wait_watch.py > /dev/null || { echo "the packages lack the documents above"; exit 1; }
systemd-analyze verify /lib/systemd/system/yardd.service /lib/systemd/system/yard-agent.service
# --driver switchtec opens /dev/switchtecN: the unit must not hide /dev (PrivateDevices=yes would) and must let
# that device class through its closed device policy.
unit_devices=$(systemd-analyze cat-config systemd/system/yardd.service 2> /dev/null || cat /lib/systemd/system/yardd.service)
grep -qx 'PrivateDevices=no' <<< "$unit_devices" && grep -qx 'DevicePolicy=closed' <<< "$unit_devices" &&
  grep -qx 'DeviceAllow=char-switchtec rw' <<< "$unit_devices" || { echo "yardd.service does not let yardd reach /dev/switchtecN"; exit 1; }
for unit in yardd yard-agent; do
  echo "   $(systemd-analyze security --offline=yes /lib/systemd/system/$unit.service 2> /dev/null | tail -1)"
done

say "the installed yardd, as its unit runs it, with the installed yardctl and Python client"
chown switchyard: "$scratch"
chmod 755 "$scratch"
python3 "$here/notify_listener.py" "$scratch/notify" > "$scratch/notify.log" 2>&1 &
listener=$!
for _ in $(seq 100); do [ -S "$scratch/notify" ] && break; sleep 0.1; done
chmod 777 "$scratch/notify"
runuser -u switchyard -- env NOTIFY_SOCKET="$scratch/notify" /usr/bin/yardd --config /etc/switchyard/yardd.conf \
  --state-dir "$scratch/state" --listen 127.0.0.1:0 --port-file "$scratch/port" --metrics-listen 127.0.0.1:0 > "$scratch/yardd.log" 2>&1 &
yardd_pid=$!
wait "$listener" || { echo "no READY=1 from yardd:"; cat "$scratch/notify.log" "$scratch/yardd.log"; exit 1; }
grep -q "^READY=1" "$scratch/notify.log"
echo "   yardd said: $(tr '\n' ' ' < "$scratch/notify.log")"
port=$(cat "$scratch/port")
export YARD_SERVER=127.0.0.1:$port YARD_CA=$scratch/state/grpc-cert.pem
/usr/bin/yardctl compose pkg-demo --gpus 2
/usr/bin/yardctl systems pkg-demo -o json | python3 -c 'import json, sys; s = json.load(sys.stdin); assert len(s["bindings"]) == 2, s'
/usr/bin/python3 - <<PY
from switchyard_client import Client
import switchyard_client
assert switchyard_client.__file__.startswith("/usr/lib/python3/dist-packages/"), switchyard_client.__file__
with Client("127.0.0.1:$port", ca="$scratch/state/grpc-cert.pem") as yard:
    assert [len(s.bindings) for s in yard.systems() if s.name == "pkg-demo"] == [2]
    yard.wait(yard.decompose("pkg-demo").id)
    print("   python3-switchyard: decomposed pkg-demo")
PY
kill -TERM "$yardd_pid"
wait "$yardd_pid" || true  # runuser passes SIGTERM on to yardd and ends by it
yardd_pid=""
grep -q "yardd stopped" "$scratch/yardd.log" || { echo "yardd did not drain and stop on SIGTERM:"; cat "$scratch/yardd.log"; exit 1; }
[ "$(stat -c %U "$scratch/state/yard.db")" = switchyard ]
[ "$(stat -c %a "$scratch/state/yard.db")" = 600 ] || { echo "yard.db is mode $(stat -c %a "$scratch/state/yard.db"), not 600"; exit 1; }

say "apt-get purge"
$SUDO apt-get purge -y -qq "${packages[@]}" > "$scratch/purge.log" 2>&1 || { cat "$scratch/purge.log"; exit 1; }
after=$(mktemp)
{ ls /etc/systemd/system/multi-user.target.wants 2> /dev/null; ls -d /etc/switchyard /var/lib/switchyard 2> /dev/null; } > "$after" || true
diff "$before" "$after" || { echo "purging left the files above behind"; exit 1; }
if [ $had_user = no ] && getent passwd switchyard > /dev/null; then echo "purging left the switchyard user"; exit 1; fi
for p in "${packages[@]}"; do
  if dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q "installed"; then echo "$p still installed"; exit 1; fi
done
rm -f "$before" "$after"
say "ok"
