// Package unixsock makes the listening Unix sockets the executor (run by
// hand or by the direct backend) and the daemon serve on.
package unixsock

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
)

// Listen makes a Unix socket at path, mode 0660, replacing a stale
// socket file that nothing listens on. It is unlinked when closed.
func Listen(path string) (*net.UnixListener, error) {
	if err := removeStale(path); err != nil {
		return nil, err
	}
	old := syscall.Umask(0o117)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	return ln, nil
}

func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listen on %s: %w", path, err)
	}
	if fi.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("listen on %s: exists and is not a socket", path)
	}
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return fmt.Errorf("listen on %s: another process is serving it", path)
	}
	return os.Remove(path)
}
