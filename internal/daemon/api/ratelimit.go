package api

import (
	"net/http"
	"sync"

	"golang.org/x/time/rate"

	"github.com/agor-sh/agor/internal/peer"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// limiter gives each caller (by uid) a token bucket: one user's script in
// a loop must not starve everyone else's requests.
type limiter struct {
	mu     sync.Mutex
	perUID map[uint32]*rate.Limiter
	r      rate.Limit
	burst  int
}

func (l *limiter) allow(uid uint32) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.perUID == nil {
		l.perUID = map[uint32]*rate.Limiter{}
	}
	lim := l.perUID[uid]
	if lim == nil {
		lim = rate.NewLimiter(l.r, l.burst)
		l.perUID[uid] = lim
	}
	return lim.Allow()
}

// DefaultCallerRate bounds each caller's API requests per second (burst 2x).
const DefaultCallerRate = 200

// guard wraps next (the mux, behind identify): per-caller rate limit,
// then counting by the mux's route.
func (s *Server) guard(mux *http.ServeMux, next http.Handler) http.Handler {
	lim := &limiter{r: DefaultCallerRate, burst: 2 * DefaultCallerRate}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cred, ok := peer.FromContext(r.Context()); ok && cred.UID != 0 && !lim.allow(cred.UID) {
			s.metrics.count("limited", http.StatusTooManyRequests)
			writeError(w, rpc.Errorf(protocol.CodeLimitReached, protocol.ReasonTooManyRequests, "more than %d requests a second from uid %d", DefaultCallerRate, cred.UID))
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		_, pattern := mux.Handler(r)
		if sw.code == 0 {
			sw.code = http.StatusOK
		}
		s.metrics.count(pattern, sw.code)
	})
}
