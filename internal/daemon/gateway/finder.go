package gateway

import (
	"bytes"
	"encoding/json"
)

// Bounds of a finder's memory.
const (
	maxCapture = 64 << 10 // bytes of one usage object (they are a few hundred)
	maxKey     = 64       // bytes of an object key kept for matching
)

// finder scans a JSON document as it streams by, without holding it,
// and hands found each object value that sits at one of paths (keys from
// the top, "[]" for any array element), with the index of that path. It keeps only the containers
// down to the longest path, the key being read, and the object being
// captured, so a body of any size, or a single line of many megabytes,
// costs the same few bytes. It never fails: bytes that are not JSON
// leave it finding nothing.
type finder struct {
	paths [][]string
	found func(path int, raw []byte)
	limit int // frames kept: the longest path's length

	frames  []frame // open containers from the top, at most limit
	depth   int     // open containers, counting those not in frames
	inStr   bool    // inside a string
	esc     bool    // after a backslash in a string
	inKey   bool    // the string is a key of frames' innermost object
	key     []byte  // the key read so far, up to maxKey bytes
	capAt   int     // depth at which the captured object opened; -1: none
	capPath int     // the index in paths of the captured object's path
	capture []byte  // the object so far, up to maxCapture bytes
	capOver bool    // the captured object is over maxCapture
	skipped int     // wanted objects over maxCapture, not handed on
}

// frame is one open container.
type frame struct {
	obj     bool
	wantKey bool   // an object whose next string is a key
	key     string // an object's key of the value now read; "" unknown
}

func newFinder(paths [][]string, found func(path int, raw []byte)) *finder {
	f := &finder{paths: paths, found: found, capAt: -1}
	for _, p := range paths {
		f.limit = max(f.limit, len(p))
	}
	return f
}

// reset readies f for a new document (the next SSE event).
func (f *finder) reset() {
	f.frames = f.frames[:0]
	f.depth = 0
	f.inStr, f.esc, f.inKey = false, false, false
	f.capAt, f.capOver = -1, false
	f.capture = f.capture[:0]
}

func (f *finder) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if f.inStr && !f.esc && !f.inKey && f.capAt < 0 {
			// The common case, the text of an answer: skip to its end.
			i := bytes.IndexAny(p, `"\`)
			if i < 0 {
				break
			}
			p = p[i:]
		}
		f.step(p[0])
		p = p[1:]
	}
	return n, nil
}

func (f *finder) step(c byte) {
	if f.capAt >= 0 {
		if len(f.capture) < maxCapture {
			f.capture = append(f.capture, c)
		} else {
			f.capOver = true
		}
	}
	if f.inStr {
		f.stringByte(c)
		return
	}
	top := f.innermost()
	switch c {
	case '"':
		f.inStr = true
		f.inKey = top != nil && top.obj && top.wantKey
		f.key = f.key[:0]
	case '{', '[':
		f.open(c)
	case '}', ']':
		f.close()
	case ',':
		if top != nil && top.obj {
			top.wantKey, top.key = true, ""
		}
	case ':':
		if top != nil && top.obj {
			top.wantKey = false
		}
	}
}

// innermost is the innermost open container when frames holds it.
func (f *finder) innermost() *frame {
	if f.depth == 0 || len(f.frames) != f.depth {
		return nil
	}
	return &f.frames[len(f.frames)-1]
}

func (f *finder) stringByte(c byte) {
	switch {
	case f.esc:
		f.esc = false
	case c == '\\':
		f.esc = true
	case c == '"':
		f.inStr = false
		if f.inKey {
			f.inKey = false
			f.innermost().key = keyText(f.key)
		}
		return
	}
	if f.inKey && len(f.key) <= maxKey {
		f.key = append(f.key, c)
	}
}

// keyText is a key as read (escapes undone); "" when over maxKey.
func keyText(raw []byte) string {
	if len(raw) > maxKey {
		return ""
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw)
	}
	var s string
	q := append(append([]byte{'"'}, raw...), '"')
	if json.Unmarshal(q, &s) != nil {
		return ""
	}
	return s
}

func (f *finder) open(c byte) {
	if c == '{' && f.capAt < 0 {
		if i := f.wanted(); i >= 0 {
			f.capAt, f.capPath = f.depth, i
			f.capture = append(f.capture[:0], c)
			f.capOver = false
		}
	}
	if len(f.frames) == f.depth && f.depth < f.limit {
		f.frames = append(f.frames, frame{obj: c == '{', wantKey: c == '{'})
	}
	f.depth++
}

func (f *finder) close() {
	if f.depth == 0 {
		return // not JSON: nothing to close
	}
	f.depth--
	if len(f.frames) > f.depth {
		f.frames = f.frames[:f.depth]
	}
	if f.capAt != f.depth {
		return
	}
	f.capAt = -1
	if f.capOver {
		f.skipped++
	} else {
		f.found(f.capPath, f.capture)
	}
	f.capture = f.capture[:0]
}

// wanted is the index of the path a value starting now sits at, or -1.
func (f *finder) wanted() int {
	if len(f.frames) != f.depth {
		return -1
	}
	for i, p := range f.paths {
		if len(p) == f.depth && f.at(p) {
			return i
		}
	}
	return -1
}

func (f *finder) at(path []string) bool {
	for i, fr := range f.frames {
		switch {
		case fr.obj && (fr.wantKey || fr.key != path[i]):
			return false
		case !fr.obj && path[i] != "[]":
			return false
		}
	}
	return true
}
