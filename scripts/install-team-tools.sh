#!/usr/bin/env bash
# What the team tests use (tests/common/pg.rs, tests/common/sshd.rs), on
# Debian 12: the PostgreSQL 15 server binaries, from which each test makes
# and drops its own throwaway cluster, and OpenSSH (sshd, ssh, ssh-keygen),
# from which each test starts throwaway sshd "hosts" on 127.0.0.x.
# Idempotent: installs only what is missing. Run as root.
#
# The packages must leave nothing running and no cluster behind: the tests
# start their own servers. While apt runs, /usr/sbin/policy-rc.d refuses
# every service start (exit 101; one already there is put back after), and
# before postgresql-15's first install createcluster.conf says
# create_main_cluster = false (else its postinst makes and starts 15/main).
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "install-team-tools: run as root" >&2; exit 1; }
PGBIN=/usr/lib/postgresql/15/bin
need=()
[ -x $PGBIN/initdb ] && [ -x $PGBIN/pg_ctl ] && [ -x $PGBIN/postgres ] || need+=(postgresql-15)
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v ssh >/dev/null 2>&1 && command -v ssh-keygen >/dev/null 2>&1 || need+=(openssh-client)
[ ${#need[@]} = 0 ] && exit 0

# The sshd and postgres servers running now, and the clusters there are:
# whatever is new after the install, the install made.
servers() { pgrep -x 'sshd|postgres' | sort || true; }
clusters() { if command -v pg_lsclusters >/dev/null 2>&1; then pg_lsclusters -h; fi; }
servers_before=$(servers)
clusters_before=$(clusters)

policy=/usr/sbin/policy-rc.d
saved=""
restore_policy() {
    if [ -n "$saved" ]; then mv -f "$saved" "$policy"; else rm -f "$policy"; fi
}
if [ -e "$policy" ]; then
    saved=$(mktemp /usr/sbin/.policy-rc.d.XXXXXX)
    cp -p "$policy" "$saved"
fi
trap restore_policy EXIT
printf '#!/bin/sh\n# install-team-tools.sh: no service starts while it installs\nexit 101\n' >"$policy"
chmod 755 "$policy"

if ! dpkg -s postgresql-15 >/dev/null 2>&1; then
    cc=/etc/postgresql-common/createcluster.conf
    mkdir -p /etc/postgresql-common
    if [ -f $cc ] && grep -Eq '^[#[:space:]]*create_main_cluster' $cc; then
        sed -Ei 's/^[#[:space:]]*create_main_cluster.*/create_main_cluster = false/' $cc
    else
        echo 'create_main_cluster = false' >>$cc
    fi
fi

export DEBIAN_FRONTEND=noninteractive
# Keep that createcluster.conf when postgresql-common's postinst offers its
# own (through ucf) or dpkg a conffile.
export UCF_FORCE_CONFFOLD=1
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    "${need[@]}" >/dev/null
restore_policy
trap - EXIT

# What the install must not have left: a server it started, a cluster.
# Test fixtures' own servers (sshd -f CONFIG, postgres -D /tmp/...) that
# started meanwhile are not the install's.
left=()
for pid in $(comm -13 <(echo "$servers_before") <(servers)); do
    args=$(ps -o args= -p "$pid" 2>/dev/null) || continue
    case "$args" in
    *sshd*" -f "* | *postgres*" -D /tmp/"*) ;;
    *) left+=("$pid: $args") ;;
    esac
done
if [ ${#left[@]} -gt 0 ]; then
    printf 'install-team-tools: the install left servers running:\n' >&2
    printf '  %s\n' "${left[@]}" >&2
    exit 1
fi
if [ "$(clusters)" != "$clusters_before" ]; then
    echo "install-team-tools: the install made a PostgreSQL cluster:" >&2
    pg_lsclusters >&2
    exit 1
fi
for b in $PGBIN/initdb $PGBIN/pg_ctl $PGBIN/postgres /usr/sbin/sshd; do
    [ -x $b ] || { echo "install-team-tools: $b is still missing" >&2; exit 1; }
done
command -v ssh >/dev/null && command -v ssh-keygen >/dev/null ||
    { echo "install-team-tools: ssh or ssh-keygen is still missing" >&2; exit 1; }
