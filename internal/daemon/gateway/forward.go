package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// forward makes the upstream call and relays its answer, filling in e.
// The request body is bytes already read whole, so the server is done
// with r.Body before the first response byte is written (no full duplex
// needed), and the transport may go on reading the copy after this
// returns without racing the server for the connection.
func (g *gateway) forward(w http.ResponseWriter, r *http.Request, grant Grant, body []byte, rt route, e *Entry) {
	out, err := outgoing(r.Context(), r, grant, body)
	if err != nil {
		g.log.Error("gateway: upstream request", "api", rt.api, "upstream", grant.Upstream.Redacted(), "err", err)
		e.Status, e.Err = http.StatusBadGateway, "upstream request: "+err.Error()
		writeError(w, rt.api, e.Status, "", msgUnreachable)
		return
	}
	resp, err := g.transport.RoundTrip(out)
	if err != nil {
		if r.Context().Err() != nil {
			e.Err = "client went away before the answer: " + err.Error()
			return
		}
		g.log.Warn("gateway: upstream unreachable", "api", rt.api, "upstream", grant.Upstream.Redacted(), "err", err)
		e.Status, e.Err = http.StatusBadGateway, "upstream: "+err.Error()
		writeError(w, rt.api, e.Status, "", msgUnreachable)
		return
	}
	defer resp.Body.Close()
	sse := isSSE(resp.Header.Get("Content-Type"))
	e.Status, e.Streamed = resp.StatusCode, sse || rt.stream
	x := newExtractor(rt.api, sse)
	copyHeader(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	err = relay(w, resp.Body, x)
	if err != nil && r.Context().Err() != nil && !errors.Is(err, errClientGone) {
		err = fmt.Errorf("%w: %w", errClientGone, err)
	}
	if errors.Is(err, errClientGone) && x.whole {
		err = nil // it left after the answer's last usage report
	}
	if enc := resp.Header.Get("Content-Encoding"); enc != "" && enc != "identity" {
		err = errors.Join(err, fmt.Errorf("answer encoded %q: usage not read", enc))
	}
	var xerr error
	e.Usage, xerr = x.result()
	if err = errors.Join(err, xerr); err != nil {
		e.Err = err.Error()
	}
}

var errClientGone = errors.New("client went away")

// outgoing is the request to send upstream: r's path under the grant's
// upstream (its path prefix kept), r's query without key, r's headers
// without the token, the real key where g.API's provider reads it.
func outgoing(ctx context.Context, r *http.Request, g Grant, body []byte) (*http.Request, error) {
	u := g.Upstream.JoinPath(r.URL.Path)
	u.RawQuery = joinQuery(g.Upstream.RawQuery, withoutKey(r.URL.RawQuery))
	out, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	out.Header = forwardHeader(r.Header)
	switch {
	case g.Own: // the person's own sign-in, as she sent it
		for _, k := range ownHeaders {
			if v := r.Header.Values(k); len(v) > 0 {
				out.Header[http.CanonicalHeaderKey(k)] = v
			}
		}
	case g.API == Anthropic:
		out.Header.Set("X-Api-Key", g.Key)
	case g.API == Gemini:
		out.Header.Set("X-Goog-Api-Key", g.Key)
	default:
		out.Header.Set("Authorization", "Bearer "+g.Key)
	}
	return out, nil
}

// ownHeaders carry a person's own sign-in (a subscription's OAuth bearer
// token, or her own key), forwarded as sent under Grant.Own.
var ownHeaders = []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key"}

// relayBuf is the most read from the provider before it is passed on.
const relayBuf = 32 << 10

// relay copies body to w as it arrives, flushing each piece so a stream
// reaches the client event by event, and tees it through x.
func relay(w http.ResponseWriter, body io.Reader, x *extractor) error {
	rc := http.NewResponseController(w)
	buf := make([]byte, relayBuf)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			_, _ = x.Write(buf[:n])
			if _, werr := w.Write(buf[:n]); werr != nil {
				return fmt.Errorf("%w: %w", errClientGone, werr)
			}
			if ferr := rc.Flush(); ferr != nil && !errors.Is(ferr, http.ErrNotSupported) {
				return fmt.Errorf("%w: %w", errClientGone, ferr)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("answer cut: %w", err)
		}
	}
}
