package token

import (
	"errors"
	"sync"
	"testing"
	"time"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func newService(ttl time.Duration, uses int) (*Service, *clock) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	s := New(ttl, uses)
	s.now = c.now
	return s, c
}

var alice = Binding{User: "alice", Session: "s1", Task: "t1"}

func TestTokenLifecycle(t *testing.T) {
	tests := []struct {
		name  string
		steps func(s *Service, c *clock, tok string) error
		want  error
	}{
		{"valid", func(s *Service, _ *clock, tok string) error { _, err := s.Check(tok, alice); return err }, nil},
		{"partial binding", func(s *Service, _ *clock, tok string) error {
			_, err := s.Check(tok, Binding{Task: "t1"})
			return err
		}, nil},
		{"unknown", func(s *Service, _ *clock, tok string) error { _, err := s.Check(tok+"x", alice); return err }, ErrUnknown},
		{"empty", func(s *Service, _ *clock, _ string) error { _, err := s.Check("", alice); return err }, ErrUnknown},
		{"expired", func(s *Service, c *clock, tok string) error {
			c.add(time.Hour)
			_, err := s.Check(tok, alice)
			return err
		}, ErrExpired},
		{"just before expiry", func(s *Service, c *clock, tok string) error {
			c.add(time.Hour - time.Nanosecond)
			_, err := s.Check(tok, alice)
			return err
		}, nil},
		{"use limit", func(s *Service, _ *clock, tok string) error {
			for range 3 {
				if _, err := s.Check(tok, alice); err != nil {
					return err
				}
			}
			_, err := s.Check(tok, alice)
			return err
		}, ErrUsedUp},
		{"other user", func(s *Service, _ *clock, tok string) error {
			_, err := s.Check(tok, Binding{User: "bob"})
			return err
		}, ErrMismatch},
		{"other task", func(s *Service, _ *clock, tok string) error {
			_, err := s.Check(tok, Binding{User: "alice", Task: "t2"})
			return err
		}, ErrMismatch},
		{"revoked", func(s *Service, _ *clock, tok string) error {
			if n := s.RevokeTask("t1"); n != 1 {
				return errors.New("revoked none")
			}
			_, err := s.Check(tok, alice)
			return err
		}, ErrUnknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, c := newService(time.Hour, 3)
			tok, err := s.Issue(alice)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.steps(s, c, tok); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestTokensAreRandom(t *testing.T) {
	s, _ := newService(time.Hour, 1)
	seen := map[string]bool{}
	for range 1000 {
		tok, err := s.Issue(alice)
		if err != nil {
			t.Fatal(err)
		}
		if len(tok) != 43 || seen[tok] {
			t.Fatalf("token %q: want 43 chars (256 bits), never repeated", tok)
		}
		seen[tok] = true
	}
}

func TestSweepAndRevokeFreeMemory(t *testing.T) {
	s, c := newService(time.Minute, 5)
	for i := range 10 {
		b := alice
		b.Task = string(rune('a' + i))
		if _, err := s.Issue(b); err != nil {
			t.Fatal(err)
		}
	}
	s.RevokeTask("a")
	if s.Live() != 9 {
		t.Fatalf("live %d after revoking one task, want 9", s.Live())
	}
	c.add(2 * time.Minute)
	if n := s.Sweep(); n != 9 || s.Live() != 0 || len(s.byTask) != 0 {
		t.Fatalf("sweep removed %d, live %d, tasks %d", n, s.Live(), len(s.byTask))
	}
}

func TestConcurrentChecksRespectUseLimit(t *testing.T) {
	s, _ := newService(time.Hour, 50)
	tok, _ := s.Issue(alice)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Check(tok, alice); err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ok != 50 {
		t.Fatalf("%d checks passed, want exactly the limit of 50", ok)
	}
}
