package api

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"

	"github.com/agor-sh/agor/internal/daemon/termcarry"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// rawTerminal serves Upgrade: agor-terminal-raw from offset (a query
// parameter, in bytes of the terminal's output). A client on the API's
// unix socket is handed to the executor, which serves it itself; any
// other (TLS), or one whose executor predates handoffs, is relayed
// (termcarry).
func (s *Server) rawTerminal(w http.ResponseWriter, r *http.Request, a termcarry.Attach) {
	offset, err := strconv.ParseInt(r.URL.Query().Get("offset"), 10, 64)
	if r.URL.Query().Get("offset") == "" {
		offset, err = 0, nil
	}
	if err != nil || offset < 0 {
		writeError(w, rpc.InvalidParams("offset", "must be a byte count"))
		return
	}
	raw, err := a.OpenRaw(r.Context(), s.Pool.DialRaw, offset, handOffable(r.Context()))
	if err != nil {
		writeError(w, err)
		return
	}
	defer raw.Close()
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		writeError(w, err)
		return
	}
	defer conn.Close()
	if raw.Handoff {
		s.metrics.rawStream("handoff")
		if err := raw.HandOver(conn, unixOf(conn), rw.Reader); err != nil {
			writeHijackedError(conn, err)
		}
		return
	}
	s.metrics.rawStream("relay")
	raw.Relay(r.Context(), conn, rw)
}

// writeHijackedError answers a client whose connection was taken from
// the HTTP server, as writeError would have.
func writeHijackedError(conn net.Conn, err error) {
	code, body := errorBody(err)
	b, _ := json.Marshal(body)
	_, _ = fmt.Fprintf(conn, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s\n",
		code, http.StatusText(code), len(b)+1, b)
}
