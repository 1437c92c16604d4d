#!/bin/sh
# Host setup for the ovs plugin's conformance run (cni-conformance --host-setup): starts a private
# Open vSwitch in the check's host namespace, ovsdb-server and ovs-vswitchd with the userspace
# datapath, and creates bridge br-cnic. Everything lives in $CNIC_TMP/ovs (database, pidfiles,
# logs, control sockets, run directory); the database socket is $CNIC_TMP/db.sock, which
# configs/ovs.json names. Never touches /var/run/openvswitch. ovs-teardown.sh stops it.
set -eu
: "${CNIC_TMP:?CNIC_TMP is not set: run this through cni-conformance --host-setup}"
d="$CNIC_TMP/ovs"
sock="$CNIC_TMP/db.sock"
mkdir -p "$d"
export OVS_RUNDIR="$d" OVS_LOGDIR="$d" OVS_DBDIR="$d" OVS_SYSCONFDIR="$d"

fail() {
  echo "ovs-setup: $1" >&2
  for log in "$d"/*.log "$d/start.err"; do
    [ -f "$log" ] && tail -n 20 "$log" >&2
  done
  exit 1
}

ovsdb-tool create "$d/conf.db" /usr/share/openvswitch/vswitch.ovsschema 2>>"$d/start.err" ||
  fail "ovsdb-tool create failed"
# --detach returns once the daemon is ready; its standard streams must not keep the caller's
# pipes open.
ovsdb-server --remote="punix:$sock" --pidfile="$d/ovsdb-server.pid" \
  --unixctl="$d/ovsdb-server.ctl" --log-file="$d/ovsdb-server.log" \
  --detach --no-chdir -vconsole:off "$d/conf.db" </dev/null >/dev/null 2>>"$d/start.err" ||
  fail "ovsdb-server did not start"
ovs-vsctl --db="unix:$sock" --timeout=20 --no-wait init 2>>"$d/start.err" ||
  fail "ovs-vsctl init failed"
ovs-vswitchd "unix:$sock" --pidfile="$d/ovs-vswitchd.pid" \
  --unixctl="$d/ovs-vswitchd.ctl" --log-file="$d/ovs-vswitchd.log" \
  --detach --no-chdir -vconsole:off </dev/null >/dev/null 2>>"$d/start.err" ||
  fail "ovs-vswitchd did not start"
# Without --no-wait this returns once ovs-vswitchd has created the bridge's device.
ovs-vsctl --db="unix:$sock" --timeout=20 add-br br-cnic -- set bridge br-cnic datapath_type=netdev \
  2>>"$d/start.err" || fail "creating bridge br-cnic failed"
