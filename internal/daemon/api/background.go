package api

import "context"

// background runs f with the daemon's lifetime (not a request's): a task
// outlives the client that started it. Shutdown cancels and waits.
func (s *Server) background(f func(context.Context)) {
	s.tasks.Add(1)
	go func() {
		defer s.tasks.Done()
		ctx := s.BaseContext
		if ctx == nil {
			ctx = context.Background()
		}
		f(ctx)
	}()
}
