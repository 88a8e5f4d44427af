package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// --- account and directories ---------------------------------------------------------

func checkAccount(_ context.Context, d *Doctor) Finding {
	const fix = "systemd-sysusers agor.conf (from /usr/lib/sysusers.d/agor.conf)"
	uid, _, err := d.lookupUser("agor")
	if err != nil {
		return fail(fix, "user agor: %v", err)
	}
	gid, err := d.lookupGroup("agor")
	if err != nil {
		return fail(fix, "group agor: %v", err)
	}
	return ok("user agor (uid %d), group agor (gid %d)", uid, gid)
}

// wantDir is a directory's expected owner and mode.
type wantDir struct {
	path, user, group string
	mode              fs.FileMode
}

var socketDirs = []wantDir{
	{"/run/agor", "root", "root", 0o755},
	{"/run/agor/executors", "root", "agor", 0o750},
}

func checkSocketDirs(_ context.Context, d *Doctor) Finding {
	const fix = "systemd-tmpfiles --create agor.conf (from /usr/lib/tmpfiles.d/agor.conf)"
	var got []string
	for _, w := range socketDirs {
		desc, err := d.dirState(w)
		if err != nil {
			return fail(fix+fmt.Sprintf("; or chown %s:%s %s && chmod %04o %s", w.user, w.group, w.path, w.mode, w.path), "%v", err)
		}
		got = append(got, desc)
	}
	return ok("%s", strings.Join(got, ", "))
}

// dirState returns "PATH USER:GROUP MODE" or why it is not as wanted.
func (d *Doctor) dirState(w wantDir) (string, error) {
	fi, err := os.Stat(d.path(w.path))
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", w.path)
	}
	if fi.Mode().Perm() != w.mode {
		return "", fmt.Errorf("%s has mode %04o, want %04o", w.path, fi.Mode().Perm(), w.mode)
	}
	if err := d.owned(fi, w.path, w.user, w.group); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %s:%s %04o", w.path, w.user, w.group, w.mode), nil
}

func (d *Doctor) owned(fi fs.FileInfo, path, userName, groupName string) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: no owner information", path)
	}
	uid, _, err := d.lookupUser(userName)
	if err != nil {
		return fmt.Errorf("%s: user %s: %w", path, userName, err)
	}
	gid, err := d.lookupGroup(groupName)
	if err != nil {
		return fmt.Errorf("%s: group %s: %w", path, groupName, err)
	}
	if int(st.Uid) != uid || int(st.Gid) != gid {
		return fmt.Errorf("%s is owned by %d:%d, want %s:%s", path, st.Uid, st.Gid, userName, groupName)
	}
	return nil
}

const masterKey = "/etc/agor/master.key"

func checkMasterKey(_ context.Context, d *Doctor) Finding {
	fi, err := os.Stat(d.path(masterKey))
	switch {
	case errors.Is(err, fs.ErrPermission):
		return skip("cannot see %s as uid %d: run agorctl doctor as root", masterKey, d.euid)
	case errors.Is(err, fs.ErrNotExist):
		return fail("(umask 077 && head -c 32 /dev/urandom | base64 >"+masterKey+"), then systemctl restart agor-daemon.service; keys stored under an earlier key are lost",
			"%s missing: the daemon cannot start (LoadCredential=master-key)", masterKey)
	case err != nil:
		return fail("check "+masterKey, "%v", err)
	}
	fixPerm := "chown root:root " + masterKey + " && chmod 0600 " + masterKey
	if fi.Mode().Perm() != 0o600 {
		return fail(fixPerm, "%s has mode %04o, want 0600", masterKey, fi.Mode().Perm())
	}
	if err := d.owned(fi, masterKey, "root", "root"); err != nil {
		return fail(fixPerm, "%v", err)
	}
	return ok("%s root:root 0600", masterKey)
}
