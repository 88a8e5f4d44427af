package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// The filesystem view of a confined process is built by the kernel, in a
// mount namespace of its own (inside a user namespace that maps the
// person to herself, so her files stay hers), the way bubblewrap builds
// one for Codex's and Anthropic's sandboxes:
//
//   - every mount read-only, recursively: no content, mode, ACL, xattr or
//     time of a file outside the writable paths can change, whatever
//     Landlock ABI the kernel has;
//   - the writable paths (the workspace, the agent's state, the private
//     temp directory) bound back read-write, as they were before the
//     root became read-only, and the private temp directory also on /tmp
//     and /var/tmp;
//   - /dev and /proc as they were (devices and the process's own files),
//     but with a devpts instance of the task's own on /dev/pts (and its
//     ptmx on /dev/ptmx), so that it can allocate terminals and sees none
//     of her others, the IPC namespace's own mqueue on /dev/mqueue, and a
//     tmpfs of its own on /dev/shm (POSIX shared memory is files there,
//     which no IPC namespace covers);
//   - /etc/passwd and /etc/group, where they lack her own entry (a
//     directory account's), the host's with it added, read-only
//     (names.go): her name resolves without a socket;
//   - inside the workspace, what another program would run later unasked
//     (git's config and hooks, the agent CLIs' and editors' project
//     settings: Protected) bound read-only on top, and .git itself made a
//     mount point, so that it cannot be renamed away and replaced.
//
// Clones of the writable trees are taken (open_tree) before the root is
// made read-only and attached after (move_mount): they keep the flags
// they had. Mounts made here belong to the namespace's user namespace;
// a nested namespace the process makes gets them locked (MNT_LOCKED), so
// it can neither remount them writable nor unmount a read-only bind to
// uncover what is beneath.

// Protected are the paths, relative to the workspace, bound read-only
// when they exist as a confined task starts: each makes a program run
// something later, outside the sandbox, without being asked.
var Protected = []string{
	// git: config (core.fsmonitor, core.hooksPath, filters, ...), hooks,
	// attributes, submodules' git directories, other worktrees, and the
	// files that point git elsewhere.
	".git/config", ".git/hooks", ".git/info", ".git/modules", ".git/worktrees",
	".git/commondir", ".git/objects/info",
	".gitmodules",
	// The agent CLIs' project settings (hooks, MCP servers, tool discovery).
	".claude", ".mcp.json", ".gemini", ".codex", ".opencode", "opencode.json", "opencode.jsonc",
	// Editors, hook managers and directory-entry tools.
	".vscode", ".idea", ".envrc", ".husky", ".pre-commit-config.yaml", ".mise.toml", "mise.toml",
	".devcontainer",
}

// view is what the namespace's init is asked to build.
type view struct {
	rw      []string // bound back writable
	protect []string // absolute paths bound read-only over rw ones
	pins    []string // bound onto themselves (writable) so they cannot be renamed
	tmp     string   // the private temp directory, also on /tmp and /var/tmp
	wd      string   // the working directory, which must stay where it is
	names   Names    // her own entries, added to /etc/passwd and /etc/group (names.go)
}

// protectedIn lists cwd's protected paths that exist now, absolute, and
// the pins they need.
func protectedIn(cwd string) (protect, pins []string) {
	if cwd == "" {
		return nil, nil
	}
	for _, rel := range Protected {
		p := filepath.Join(cwd, rel)
		if _, err := os.Lstat(p); err == nil {
			protect = append(protect, p)
		}
	}
	if fi, err := os.Lstat(filepath.Join(cwd, ".git")); err == nil {
		if fi.IsDir() {
			pins = append(pins, filepath.Join(cwd, ".git"))
		} else {
			protect = append(protect, filepath.Join(cwd, ".git")) // a worktree's or submodule's pointer
		}
	}
	return protect, pins
}

// tmpDirs are where the private temp directory is bound, when they exist.
var tmpDirs = []string{"/tmp", "/var/tmp"}

// overlayTmp says whether the private temp directory goes on /tmp and
// /var/tmp: not when another path of the view, or the working
// directory, lies beneath them (a workspace in /tmp), which the overlay
// would hide.
func (v view) overlayTmp() bool {
	if v.tmp == "" {
		return false
	}
	for _, t := range tmpDirs {
		if v.wd == t || strings.HasPrefix(v.wd, t+"/") {
			return false
		}
	}
	for _, p := range append(append(append([]string(nil), v.rw...), v.pins...), v.protect...) {
		for _, t := range tmpDirs {
			if p != v.tmp && strings.HasPrefix(p, t+"/") {
				return false
			}
		}
	}
	return true
}

// shmDir is where POSIX shared memory lives (shm_open(3)).
const shmDir = "/dev/shm"

// ownShm says whether the view puts a tmpfs of its own on /dev/shm: where
// it exists, and no path of the view nor the working directory lies
// beneath it, which the tmpfs would hide (then /dev/shm stays the host's,
// read-only).
func (v view) ownShm() bool {
	if !dirExists(shmDir) {
		return false
	}
	for _, p := range append(append(append([]string{v.wd}, v.rw...), v.pins...), v.protect...) {
		if p == shmDir || strings.HasPrefix(p, shmDir+"/") {
			return false
		}
	}
	return true
}

// writable is what Landlock lets the process write in the built view:
// the view's writable paths, with /tmp and /var/tmp for the temp
// directory they now show, and its own /dev/shm.
func (v view) writable() []string {
	out := v.rw
	if v.overlayTmp() {
		out = v.tmpWritable()
	}
	if v.ownShm() {
		out = append(out[:len(out):len(out)], shmDir)
	}
	return out
}

// tmpWritable is rw with /tmp and /var/tmp in the temp directory's place.
func (v view) tmpWritable() []string {
	out := []string{}
	for _, p := range v.rw {
		if p != v.tmp {
			out = append(out, p)
		}
	}
	for _, t := range tmpDirs {
		if dirExists(t) {
			out = append(out, t)
		}
	}
	return out
}

// build makes the view in this (new) mount namespace. It needs
// CAP_SYS_ADMIN in the namespace's user namespace.
func (v view) build() error {
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	var c clones
	defer c.close()
	if err := c.take(v); err != nil {
		return err
	}
	made, err := c.addNames(v.names, v.tmp)
	defer removeAll(made) // the clones hold them: nothing in the view names them
	if err != nil {
		return err
	}
	ro := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &ro); err != nil {
		return fmt.Errorf("make / read-only: %w", err)
	}
	if err := c.attach(); err != nil {
		return err
	}
	mountProc()
	if err := ownDevices(); err != nil {
		return err
	}
	if v.ownShm() {
		return mountShm()
	}
	return nil
}

// shmOptions bound the view's /dev/shm: a quarter of the memory (the
// pages are charged to the person's cgroup, as her limits: bound them
// too), world-writable and sticky as the host's is, so that shm_open
// works as it does outside; it goes with the namespace.
const shmOptions = "mode=1777,size=25%"

// mountShm puts a tmpfs of the task's own on /dev/shm: shm_open(3) works,
// and no object of her other programs is in reach, nor one of the task's
// in theirs. Failing fails the view.
func mountShm() error {
	if err := unix.Mount("tmpfs", shmDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, shmOptions); err != nil {
		return fmt.Errorf("own tmpfs on %s: %w", shmDir, err)
	}
	return nil
}

// ownDevices mounts, over the host's, a new devpts instance on /dev/pts
// (any user may open its ptmx; slaves are the task's, 0620, in her own
// group: no gid= that names a host group) with its ptmx bound on
// /dev/ptmx, and this IPC namespace's mqueue on /dev/mqueue, where they
// exist. A terminal the task was started on stays open as the fds it
// inherited (restrict lets it reopen those). Either mount failing fails
// the view: the host's terminals would stay in reach.
func ownDevices() error {
	const nodev = unix.MS_NOSUID | unix.MS_NOEXEC
	if dirExists("/dev/pts") {
		if err := unix.Mount("devpts", "/dev/pts", "devpts", nodev, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
			return fmt.Errorf("own devpts on /dev/pts: %w", err)
		}
		// A symlink (pts/ptmx, in containers) already names the new one.
		if fi, err := os.Lstat("/dev/ptmx"); err == nil && fi.Mode()&os.ModeSymlink == 0 {
			if err := unix.Mount("/dev/pts/ptmx", "/dev/ptmx", "", unix.MS_BIND, ""); err != nil {
				return fmt.Errorf("bind /dev/pts/ptmx on /dev/ptmx: %w", err)
			}
		}
	}
	if dirExists("/dev/mqueue") {
		if err := unix.Mount("mqueue", "/dev/mqueue", "mqueue", nodev|unix.MS_NODEV, ""); err != nil {
			return fmt.Errorf("own mqueue on /dev/mqueue: %w", err)
		}
	}
	return nil
}

// clones are detached copies of mount trees (open_tree), each with the
// path it goes back on, in the order they are attached.
type clones []struct {
	fd   int
	path string
}

// take clones, before the root becomes read-only: /dev and /proc, the
// writable paths (parents first), the temp directory for /tmp and
// /var/tmp, the pins, and the protected paths made read-only.
func (c *clones) take(v view) error {
	for _, p := range []string{"/dev", "/proc"} {
		if err := c.add(p, p, false); err != nil {
			return err
		}
	}
	overlay := v.overlayTmp()
	for _, p := range byDepth(v.rw) {
		if overlay && p == v.tmp {
			continue // it is /tmp now
		}
		if err := c.add(p, p, false); err != nil {
			return err
		}
	}
	for _, t := range tmpDirs {
		if overlay && dirExists(t) {
			if err := c.add(v.tmp, t, false); err != nil {
				return err
			}
		}
	}
	for _, p := range byDepth(v.pins) {
		if err := c.add(p, p, false); err != nil {
			return err
		}
	}
	for _, p := range byDepth(v.protect) {
		if err := c.add(p, p, true); err != nil {
			return err
		}
	}
	return nil
}

// add clones src (recursively) to go on dst, read-only if asked.
func (c *clones) add(src, dst string, readOnly bool) error {
	fd, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if errors.Is(err, unix.ENOENT) {
		return nil // nothing there to bind: creating it is refused
	}
	if err != nil {
		return fmt.Errorf("clone %s: %w", src, err)
	}
	*c = append(*c, struct {
		fd   int
		path string
	}{fd, dst})
	if !readOnly {
		return nil
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("read-only %s: %w", src, err)
	}
	return nil
}

// attach puts each clone on its path (move_mount), in order.
func (c clones) attach() error {
	for _, a := range c {
		if err := unix.MoveMount(a.fd, "", unix.AT_FDCWD, a.path, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("bind %s: %w", a.path, err)
		}
	}
	return nil
}

func (c clones) close() {
	for _, a := range c {
		unix.Close(a.fd)
	}
}

// mountProc puts the PID namespace's own /proc on the host's, so that
// /proc/self and /proc/PID name this namespace's processes (and no
// other). The kernel refuses it where the host's /proc has locked mounts
// over some of its files (a unit with ProtectKernelLogs=): then the
// host's stays, which shows what the unit's ProtectProc= lets it show.
func mountProc() {
	_ = unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
}

// byDepth sorts paths parents first, so a child's bind lands on its
// parent's.
func byDepth(paths []string) []string {
	out := append([]string(nil), paths...)
	sort.SliceStable(out, func(i, j int) bool {
		return strings.Count(out[i], "/") < strings.Count(out[j], "/")
	})
	return out
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
