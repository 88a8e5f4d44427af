#!/usr/bin/env bash
# Puts a real directory into the unbooted root filesystem $1: OpenLDAP's
# slapd holding the accounts in people.ldif (loaded offline with slapadd),
# nslcd and libnss-ldapd so NSS (and systemd-userdbd's NSS bridge) sees
# them, and their home directories. Nothing of it is in /etc/passwd.
# More LDIF files after the root (e.g. the Slurm suite's accounts) are
# loaded after people.ldif.
set -euo pipefail
root=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
cp "$here/config.ldif" "$here/people.ldif" "$root/tmp/"
i=0
for extra in "$@"; do
	i=$((i + 1))
	cp "$extra" "$root/tmp/extra-$i.ldif"
done
chroot "$root" sh -eu -c '
	rm -rf /etc/ldap/slapd.d/* /var/lib/ldap/*
	slapadd -q -n0 -F /etc/ldap/slapd.d -l /tmp/config.ldif
	slapadd -q -n1 -F /etc/ldap/slapd.d -l /tmp/people.ldif
	for f in /tmp/extra-*.ldif; do
		[ -e "$f" ] || continue
		slapadd -q -n1 -F /etc/ldap/slapd.d -l "$f"
		rm "$f"
	done
	chown -R openldap:openldap /etc/ldap/slapd.d /var/lib/ldap
	rm /tmp/config.ldif /tmp/people.ldif
'
cat >"$root/etc/nslcd.conf" <<'CONF'
uid nslcd
gid nslcd
uri ldap://127.0.0.1/
base dc=agor,dc=test
CONF
chmod 640 "$root/etc/nslcd.conf"
chroot "$root" chown root:nslcd /etc/nslcd.conf
sed -i -E 's/^(passwd|group):.*/\1: files systemd ldap/' "$root/etc/nsswitch.conf"
for u in ada.lovelace:20001 grace.hopper:20002; do
	mkdir -p "$root/home/${u%%:*}"
	chown "${u#*:}:${u#*:}" "$root/home/${u%%:*}"
	chmod 750 "$root/home/${u%%:*}"
done
