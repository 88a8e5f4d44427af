package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"
)

// The trivial peer: what a Go programmer writes for NDJSON in ten minutes.
// One goroutine per connection scans lines, unmarshals each, and for a
// request marshals the reply and writes it at once.

// pingResult has the fields of the executor's ping result.
type pingResult struct {
	Pong      bool   `json:"pong"`
	Timestamp int64  `json:"timestamp"`
	PID       int    `json:"pid"`
	UID       int    `json:"uid"`
	User      string `json:"user"`
	Version   string `json:"version"`
	UptimeMS  int64  `json:"uptime_ms"`
}

type trivialRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

type trivialResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  pingResult      `json:"result"`
}

// trivialServe answers ping on every connection to a socket at path.
func trivialServe(path string) error {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	started := time.Now()
	for {
		nc, err := ln.Accept()
		if err != nil {
			return err
		}
		go trivialPing(nc, started)
	}
}

func trivialPing(nc net.Conn, started time.Time) {
	defer nc.Close()
	sc := bufio.NewScanner(nc)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var req trivialRequest
		if json.Unmarshal(sc.Bytes(), &req) != nil || req.Method != "ping" {
			continue
		}
		now := time.Now()
		out, err := json.Marshal(trivialResponse{JSONRPC: "2.0", ID: req.ID, Result: pingResult{
			Pong: true, Timestamp: now.UnixMilli(), PID: os.Getpid(), UID: os.Getuid(),
			User: os.Getenv("USER"), Version: "trivial", UptimeMS: now.Sub(started).Milliseconds(),
		}})
		if err != nil {
			return
		}
		if _, err := nc.Write(append(out, '\n')); err != nil {
			return
		}
	}
}

// trivialNote is a report_message notification as the trivial reader
// decodes it: in one json.Unmarshal.
type trivialNote struct {
	JSONRPC string        `json:"jsonrpc"`
	Method  string        `json:"method"`
	Params  reportMessage `json:"params"`
}

// trivialRead scans and unmarshals report_message lines from nc, handing
// each to sink, until the connection ends.
func trivialRead(nc net.Conn, sink func(reportMessage)) {
	sc := bufio.NewScanner(nc)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var n trivialNote
		if json.Unmarshal(sc.Bytes(), &n) != nil || n.Method != "report_message" {
			continue
		}
		sink(n.Params)
	}
}

// trivialClient is the trivial peer's caller: it writes a request and
// reads its response on the calling goroutine, and pipelines by writing
// from one goroutine while another reads.
type trivialClient struct {
	nc   net.Conn
	sc   *bufio.Scanner
	next int64
}

func dialTrivial(path string) (*trivialClient, error) {
	nc, err := net.Dial("unix", path)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(nc)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	return &trivialClient{nc: nc, sc: sc}, nil
}

func (c *trivialClient) request() ([]byte, error) {
	c.next++
	out, err := json.Marshal(trivialRequest{JSONRPC: "2.0", ID: json.RawMessage(strconv.FormatInt(c.next, 10)), Method: "ping", Params: json.RawMessage("{}")})
	return append(out, '\n'), err
}

func (c *trivialClient) response() error {
	if !c.sc.Scan() {
		return fmt.Errorf("trivial client: %v", c.sc.Err())
	}
	var resp trivialResponse
	return json.Unmarshal(c.sc.Bytes(), &resp)
}

// ping makes one call.
func (c *trivialClient) ping() error {
	req, err := c.request()
	if err == nil {
		_, err = c.nc.Write(req)
	}
	if err != nil {
		return err
	}
	return c.response()
}

// pipeline makes n calls with up to window of them in flight.
func (c *trivialClient) pipeline(n, window int) error {
	slots := make(chan struct{}, window)
	errc := make(chan error, 1)
	go func() {
		for range n {
			slots <- struct{}{}
			req, err := c.request()
			if err == nil {
				_, err = c.nc.Write(req)
			}
			if err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	for range n {
		if err := c.response(); err != nil {
			return err
		}
		<-slots
	}
	return <-errc
}

// trivialSend streams n report_message notifications to path through a
// bufio.Writer, then waits for the receiver to hang up.
func trivialSend(path string, n int) error {
	nc, err := net.Dial("unix", path)
	if err != nil {
		return err
	}
	defer nc.Close()
	w := bufio.NewWriterSize(nc, 64<<10)
	for i := range int64(n) {
		out, err := json.Marshal(trivialNote{JSONRPC: "2.0", Method: "report_message", Params: payload(i)})
		if err != nil {
			return err
		}
		if _, err := w.Write(append(out, '\n')); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, nc) // until the receiver closes
	return nil
}
