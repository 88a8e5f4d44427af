package terminal

// ring keeps the last len(buf) bytes written to it: a terminal's
// scrollback, replayed to whoever attaches.
type ring struct {
	buf  []byte
	end  int  // where the next byte goes
	full bool // buf has wrapped at least once
}

func newRing(size int) *ring { return &ring{buf: make([]byte, size)} }

func (r *ring) Write(p []byte) {
	if len(p) >= len(r.buf) {
		copy(r.buf, p[len(p)-len(r.buf):])
		r.end, r.full = 0, true
		return
	}
	n := copy(r.buf[r.end:], p)
	if n < len(p) {
		copy(r.buf, p[n:])
		r.full = true
	}
	r.end = (r.end + len(p)) % len(r.buf)
	if r.end == 0 && len(p) > 0 {
		r.full = true
	}
}

// Bytes returns a copy of what the ring holds, oldest first.
func (r *ring) Bytes() []byte {
	if !r.full {
		return append([]byte(nil), r.buf[:r.end]...)
	}
	out := make([]byte, 0, len(r.buf))
	out = append(out, r.buf[r.end:]...)
	return append(out, r.buf[:r.end]...)
}

// Len is how many bytes the ring holds.
func (r *ring) Len() int {
	if r.full {
		return len(r.buf)
	}
	return r.end
}
