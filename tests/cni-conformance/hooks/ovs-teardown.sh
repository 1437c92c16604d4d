#!/bin/sh
# Host teardown for the ovs plugin's conformance run (cni-conformance --host-teardown): stops
# the ovs-vswitchd and ovsdb-server that ovs-setup.sh started, by the pids in their pidfiles
# (checking each pid still runs that program), TERM first and KILL after 5 s.
set -u
: "${CNIC_TMP:?CNIC_TMP is not set: run this through cni-conformance --host-teardown}"
d="$CNIC_TMP/ovs"

# Alive and not a zombie waiting for its reaper.
alive() {
  [ -r "/proc/$1/stat" ] && [ "$(sed 's/.*) //' "/proc/$1/stat" | cut -c1)" != Z ]
}

for name in ovs-vswitchd ovsdb-server; do
  pidfile="$d/$name.pid"
  [ -f "$pidfile" ] || continue
  pid=$(cat "$pidfile")
  case "$pid" in '' | *[!0-9]*) continue ;; esac
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ] || continue
  kill -TERM "$pid" 2>/dev/null || continue
  i=0
  while alive "$pid" && [ "$i" -lt 100 ]; do
    sleep 0.05
    i=$((i + 1))
  done
  if alive "$pid"; then kill -KILL "$pid" 2>/dev/null; fi
done
exit 0
