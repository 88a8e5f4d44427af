package daemon

import (
	"net"

	"github.com/agor-sh/agor/internal/daemon/api"
	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/daemon/warmcap"
)

// The daemon's parts, for the end-to-end tests (internal/daemon/e2e),
// which boot it whole in their own process and look inside: they store
// tasks straight into its store, set its API's orphan grace before Run,
// read the warm agents it keeps and the address its TCP API took.
// Nothing else calls these.

// Store is the daemon's store.
func (d *Daemon) Store() *store.DB { return d.store }

// Server is the daemon's API server.
func (d *Daemon) Server() *api.Server { return d.srv }

// Warm is the host's warm-agent cap.
func (d *Daemon) Warm() *warmcap.Cap { return d.warm }

// TCPAddr is the address the API listens on with bearer tokens, nil when
// api.tcp_address is not set.
func (d *Daemon) TCPAddr() net.Addr {
	if d.tcp == nil {
		return nil
	}
	return d.tcp.Addr()
}
