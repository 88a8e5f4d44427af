package gitguard

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// A git config file is read here as git's own config.c reads it
// (git_parse_source, get_base_var, get_extended_base_var, get_value,
// parse_value): a key may follow its section header on the same line, a
// value may go on over lines (a backslash before the newline), quotes
// and escapes are git's, names are case-insensitive, "\r\n" is a
// newline. What git would refuse is refused, and so is what git would
// read differently from how it reads here (a NUL byte, which git's C
// strings cut a value or name at): either makes the file one the guard
// could not parse fully. No library is used: the Go ones that exist
// (go-git's plumbing/format/config and the gcfg it grew from) read their
// own dialect of the format, with neither git's comment rules after a
// header nor its continuation lines, so they would see keys other than
// git sees, which is the way past this guard closes.

// setting is one "name = value" of a config, name as git flattens it:
// section (lower-case), subsection (as written when quoted, lower-case
// in the old dotted form), key (lower-case), joined with dots.
type setting struct {
	name     string
	value    string
	hasValue bool // false: the key alone, which git reads as true
}

// section, subsection and key of the name: the part before the first
// dot, between the first and the last, after the last (git's own split).
func (s setting) parts() (section, sub, key string) {
	first, last := strings.IndexByte(s.name, '.'), strings.LastIndexByte(s.name, '.')
	if first < 0 {
		return "", "", s.name
	}
	if first == last {
		return s.name[:first], "", s.name[last+1:]
	}
	return s.name[:first], s.name[first+1 : last], s.name[last+1:]
}

// errSyntax is a config git would refuse, or could read otherwise.
var errSyntax = errors.New("not git configuration syntax")

// errVersions is a config that git's releases read differently: a tab or
// carriage return between a value's words, outside quotes, which git up
// to 2.45 reads as a space and later releases keep.
var errVersions = fmt.Errorf("%w: whitespace git's releases read differently", errSyntax)

// configReader is git's get_next_char over a byte slice.
type configReader struct {
	data []byte
	pos  int
	line int
	eof  bool
}

func (r *configReader) next() byte {
	if r.pos >= len(r.data) {
		r.eof = true
		return '\n'
	}
	c := r.data[r.pos]
	r.pos++
	if c == '\r' && r.pos < len(r.data) && r.data[r.pos] == '\n' {
		c = '\n'
		r.pos++
	}
	if c == '\n' {
		r.line++
	}
	return c
}

func isSpace(c byte) bool   { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isAlpha(c byte) bool   { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isKeyChar(c byte) bool { return isAlpha(c) || c >= '0' && c <= '9' || c == '-' }
func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// parseConfig reads data as git does and returns every setting in order.
func parseConfig(data []byte) ([]setting, error) {
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, fmt.Errorf("%w: a NUL byte", errSyntax)
	}
	r := &configReader{data: data, line: 1}
	if len(data) >= 3 && string(data[:3]) == "\xef\xbb\xbf" {
		r.pos = 3
	}
	var out []setting
	var base []byte
	comment := false
	for {
		c := r.next()
		switch {
		case c == '\n' && r.eof:
			return out, nil
		case c == '\n':
			comment = false
		case comment || isSpace(c):
		case c == '#' || c == ';':
			comment = true
		case c == '[':
			var err error
			if base, err = r.header(); err != nil {
				return nil, fmt.Errorf("%w (line %d)", err, r.line)
			}
		case !isAlpha(c):
			return nil, fmt.Errorf("%w: %q starts no key (line %d)", errSyntax, c, r.line)
		default:
			s, err := r.keyValue(base, c)
			if err != nil {
				return nil, fmt.Errorf("%w (line %d)", err, r.line)
			}
			out = append(out, s)
		}
	}
}

// header reads a section header after its "[" and returns the name's
// stem, "section." or "section.sub.".
func (r *configReader) header() ([]byte, error) {
	var name []byte
	for {
		c := r.next()
		switch {
		case r.eof:
			return nil, fmt.Errorf("%w: a header without its ]", errSyntax)
		case c == ']':
			if len(name) == 0 {
				return nil, fmt.Errorf("%w: an empty header", errSyntax)
			}
			return append(name, '.'), nil
		case isSpace(c):
			return r.subsection(name, c)
		case !isKeyChar(c) && c != '.':
			return nil, fmt.Errorf("%w: %q in a header", errSyntax, c)
		default:
			name = append(name, lower(c))
		}
	}
}

// subsection reads [section "sub"] from the space after section.
func (r *configReader) subsection(name []byte, c byte) ([]byte, error) {
	for isSpace(c) {
		if c == '\n' {
			return nil, fmt.Errorf("%w: a header over lines", errSyntax)
		}
		c = r.next()
	}
	if c != '"' {
		return nil, fmt.Errorf("%w: a subsection not quoted", errSyntax)
	}
	name = append(name, '.')
	for {
		c := r.next()
		if c == '\\' {
			c = r.next()
		} else if c == '"' {
			break
		}
		if c == '\n' {
			return nil, fmt.Errorf("%w: a subsection over lines", errSyntax)
		}
		name = append(name, c)
	}
	if r.next() != ']' {
		return nil, fmt.Errorf("%w: a subsection not closed by ]", errSyntax)
	}
	return append(name, '.'), nil
}

// keyValue reads a key from its first letter c, and its value.
func (r *configReader) keyValue(base []byte, c byte) (setting, error) {
	name := append(append([]byte(nil), base...), lower(c))
	for {
		c = r.next()
		if r.eof || !isKeyChar(c) {
			break
		}
		name = append(name, lower(c))
	}
	for c == ' ' || c == '\t' {
		c = r.next()
	}
	s := setting{name: string(name)}
	if c == '\n' {
		return s, nil
	}
	if c != '=' {
		return s, fmt.Errorf("%w: %q after key %s", errSyntax, c, name)
	}
	v, err := r.value()
	s.value, s.hasValue = v, true
	return s, err
}

// value is git's parse_value: whitespace outside quotes trimmed at the
// ends and kept inside, comments outside quotes, escapes \n \t \b \\ \".
func (r *configReader) value() (string, error) {
	var v []byte
	quote, comment, trim, raw := false, false, -1, -1 // raw: the first tab kept outside quotes
	for {
		c := r.next()
		switch {
		case c == '\n':
			if quote {
				return "", fmt.Errorf("%w: a quote left open", errSyntax)
			}
			if trim >= 0 {
				v = v[:trim]
			}
			if raw >= 0 && raw < len(v) {
				return "", errVersions
			}
			return string(v), nil
		case comment:
		case isSpace(c) && !quote:
			if trim < 0 {
				trim = len(v)
			}
			if len(v) > 0 {
				v = append(v, c)
			}
			if c != ' ' && len(v) > 0 && raw < 0 {
				raw = len(v) - 1
			}
		case !quote && (c == ';' || c == '#'):
			comment = true
		case c == '\\':
			trim = -1
			e, ok := r.escape()
			if !ok {
				return "", fmt.Errorf("%w: an unknown escape", errSyntax)
			}
			if e != 0 {
				v = append(v, e)
			}
		case c == '"':
			trim = -1
			quote = !quote
		default:
			trim = -1
			v = append(v, c)
		}
	}
}

// escape reads what follows a backslash in a value: the byte it stands
// for, 0 for a continuation (a newline), false for what git refuses.
func (r *configReader) escape() (byte, bool) {
	switch c := r.next(); c {
	case '\n': // at the end of the file too, as git takes it
		return 0, true
	case 't':
		return '\t', true
	case 'b':
		return '\b', true
	case 'n':
		return '\n', true
	case '\\', '"':
		return c, true
	}
	return 0, false
}

// renderConfig writes settings as a config git reads back to the same
// settings: one header for each run of a section, every value quoted
// and escaped. ok is false for what has no such form (a name that git
// could not have read, a carriage return in a value).
func renderConfig(settings []setting) (data []byte, ok bool) {
	var b strings.Builder
	stem := ""
	for _, s := range settings {
		section, sub, key := s.parts()
		if section == "" || strings.ContainsAny(s.value, "\r\x00") || strings.ContainsAny(sub, "\n\x00") {
			return nil, false
		}
		if this := s.name[:len(s.name)-len(key)]; this != stem {
			stem = this
			b.WriteString("[" + section)
			if sub != "" || strings.Count(s.name, ".") > 1 {
				b.WriteString(` "` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(sub) + `"`)
			}
			b.WriteString("]\n")
		}
		b.WriteString("\t" + key)
		if s.hasValue {
			b.WriteString(` = "` + escapeValue(s.value) + `"`)
		}
		b.WriteString("\n")
	}
	return []byte(b.String()), true
}

func escapeValue(v string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`, "\b", `\b`).Replace(v)
}
