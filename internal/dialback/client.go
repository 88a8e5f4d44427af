package dialback

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// ErrRefused is the daemon's refusal of the hello: the token is unknown,
// revoked or not this user's job's. Dialling again will not help.
var ErrRefused = errors.New("the daemon refused this executor's token")

// Dialer dials the daemon from a compute node.
type Dialer struct {
	Addr       string         // host:port of the daemon's dial-back listener
	ServerName string         // the name in the daemon's certificate ("" : Addr's host)
	CA         *x509.CertPool // the daemon's CA, pinned: the system roots are not asked
	Hello      protocol.HelloParams
}

// LoadCA reads a PEM file of CA certificates.
func LoadCA(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s: no PEM certificate", path)
	}
	return pool, nil
}

// Dial connects, says hello and returns the connection, which then carries
// the executor protocol.
func (d *Dialer) Dial(ctx context.Context) (net.Conn, error) {
	name := d.ServerName
	if name == "" {
		host, _, err := net.SplitHostPort(d.Addr)
		if err != nil {
			return nil, err
		}
		name = host
	}
	td := tls.Dialer{Config: &tls.Config{RootCAs: d.CA, ServerName: name, MinVersion: tls.VersionTLS13}}
	c, err := td.DialContext(ctx, "tcp", d.Addr)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(helloTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = c.SetDeadline(deadline)
	br := bufio.NewReaderSize(c, maxHello)
	if err := d.hello(c, br); err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return &bufferedConn{Conn: c, r: br}, nil
}

func (d *Dialer) hello(c net.Conn, br *bufio.Reader) error {
	if err := rpc.WriteRequest(c, 0, protocol.MethodHello, d.Hello); err != nil {
		return err
	}
	var res protocol.HelloResult
	err := rpc.ReadResult(br, &res)
	var e *rpc.Error
	switch {
	case errors.As(err, &e):
		return ErrRefused
	case errors.Is(err, rpc.ErrBadResponse):
		return fmt.Errorf("the daemon's answer: %w", err)
	case err != nil:
		return fmt.Errorf("reading the daemon's answer: %w", err)
	case !res.Accepted:
		return ErrRefused
	}
	return nil
}
