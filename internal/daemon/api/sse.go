package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/agor-sh/agor/internal/wire/apiwire"
)

type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (s *sseWriter) event(ev apiwire.StoredEvent) error {
	b, _ := json.Marshal(ev)
	return s.send(ev.Type, strconv.FormatInt(ev.Sequence, 10), string(b))
}

func (s *sseWriter) send(name, id, data string) error {
	if strings.ContainsAny(name, "\r\n") || strings.ContainsAny(id, "\r\n") {
		// Never from the broker, which takes only the event vocabulary;
		// a store written before it checked could hold one.
		name, id = "invalid", ""
	}
	if id != "" {
		if _, err := fmt.Fprintf(s.w, "id: %s\n", id); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, data); err != nil {
		return err
	}
	return s.rc.Flush()
}
