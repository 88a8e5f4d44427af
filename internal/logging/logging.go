// Package logging builds the slog loggers of agor's programs: native
// journald entries with structured fields when stderr is a journal stream,
// plain text otherwise.
package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/coreos/go-systemd/v22/journal"
)

// Format selects the output.
type Format string

// Formats accepted by New.
const (
	Auto    Format = "auto"    // journal when stderr is a journal stream, else text
	Journal Format = "journal" // native journald protocol
	Text    Format = "text"    // logfmt-style text on stderr
)

// ParseFormat validates a --log-format value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case Auto, Journal, Text:
		return f, nil
	}
	return "", fmt.Errorf("unknown log format %q (want auto, journal or text)", s)
}

// New returns a logger for the program ident at level. Under journald
// each attribute becomes a field AGOR_<KEY>, so `journalctl AGOR_USER=alice`
// filters; text output drops timestamps when journald stamps lines anyway.
func New(ident string, f Format, level slog.Leveler, stderr io.Writer) *slog.Logger {
	streamed, _ := journal.StderrIsJournalStream()
	if f == Journal || (f == Auto && streamed && journal.Enabled()) {
		return slog.New(&journalHandler{ident: ident, level: level, fallback: textHandler(stderr, level, true)})
	}
	return slog.New(textHandler(stderr, level, streamed))
}

func textHandler(w io.Writer, level slog.Leveler, noTime bool) slog.Handler {
	opts := &slog.HandlerOptions{Level: level}
	if noTime {
		opts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}
	}
	return slog.NewTextHandler(w, opts)
}

// journalHandler sends each record as one journal entry.
type journalHandler struct {
	ident    string
	level    slog.Leveler
	attrs    []slog.Attr
	group    string // field-name prefix from WithGroup
	fallback slog.Handler
}

var _ slog.Handler = (*journalHandler)(nil)

func (h *journalHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

func (h *journalHandler) Handle(ctx context.Context, r slog.Record) error {
	vars := map[string]string{"SYSLOG_IDENTIFIER": h.ident}
	for _, a := range h.attrs {
		addField(vars, "", a)
	}
	r.Attrs(func(a slog.Attr) bool {
		addField(vars, h.group, a)
		return true
	})
	if err := journal.Send(r.Message, priority(r.Level), vars); err != nil {
		return h.fallback.Handle(ctx, r) // never lose a line because journald is away
	}
	return nil
}

func (h *journalHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr{}, h.attrs...), prefixed(h.group, attrs)...)
	c.fallback = h.fallback.WithAttrs(attrs)
	return &c
}

func (h *journalHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.group = h.group + name + "_"
	c.fallback = h.fallback.WithGroup(name)
	return &c
}

func prefixed(group string, attrs []slog.Attr) []slog.Attr {
	if group == "" {
		return attrs
	}
	out := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		out[i] = slog.Attr{Key: group + a.Key, Value: a.Value}
	}
	return out
}

func addField(vars map[string]string, prefix string, a slog.Attr) {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		for _, g := range v.Group() {
			addField(vars, prefix+a.Key+"_", g)
		}
		return
	}
	if a.Key == "" {
		return
	}
	vars[FieldName(prefix+a.Key)] = v.String()
}

// FieldName maps an attribute key to a journal field name: AGOR_ and the
// key upper-cased, with anything journald does not allow made '_'.
func FieldName(key string) string {
	var b strings.Builder
	b.WriteString("AGOR_")
	for _, r := range key {
		switch {
		case r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

func priority(l slog.Level) journal.Priority {
	switch {
	case l >= slog.LevelError:
		return journal.PriErr
	case l >= slog.LevelWarn:
		return journal.PriWarning
	case l >= slog.LevelInfo:
		return journal.PriInfo
	}
	return journal.PriDebug
}

// ParseLevel validates a --log-level value.
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("unknown log level %q (want debug, info, warn or error)", s)
	}
	return l, nil
}
