package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// sseWriter writes Server-Sent Events, each flushed as it is written.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (s *sseWriter) event(ev apiwire.StoredEvent) error {
	return s.write(appendEvent(nil, ev))
}

func (s *sseWriter) send(name, id, data string) error {
	return s.write(appendSSE(nil, name, id, data))
}

// write sends b, one or more whole events, and flushes it.
func (s *sseWriter) write(b []byte) error {
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.rc.Flush()
}

// appendEvent appends a stored event's lines to b.
func appendEvent(b []byte, ev apiwire.StoredEvent) []byte {
	data, _ := json.Marshal(ev)
	return appendSSE(b, ev.Type, strconv.FormatInt(ev.Sequence, 10), string(data))
}

// appendSSE appends one event's lines to b. data is one line (JSON).
func appendSSE(b []byte, name, id, data string) []byte {
	if strings.ContainsAny(name, "\r\n") || strings.ContainsAny(id, "\r\n") {
		// Never from the broker, which takes only the event vocabulary;
		// a store written before it checked could hold one.
		name, id = "invalid", ""
	}
	if id != "" {
		b = append(append(append(b, "id: "...), id...), '\n')
	}
	b = append(append(append(b, "event: "...), name...), "\ndata: "...)
	return append(append(b, data...), "\n\n"...)
}
