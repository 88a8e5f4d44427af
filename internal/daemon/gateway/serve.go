package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	started := time.Now()
	ownToken, own := cutOwn(r.URL)
	rt, ok := routeOf(r.Method, r.URL.Path)
	if ok && rt.upstream != "" && !own {
		ok = false // another upstream is for a person's own sign-in only
	}
	if !ok {
		writeError(w, "", http.StatusNotFound, "", fmt.Sprintf("agor gateway: no model API at %s %s", r.Method, r.URL.Path))
		return
	}
	var grant Grant
	if own {
		grant, ok = g.authorizeOwn(w, r, rt, ownToken)
	} else {
		grant, ok = g.authorize(w, r, rt.api)
	}
	if !ok || !g.enter(w, rt.api, grant) {
		return
	}
	defer g.flights.leave(grant.Person)
	if rt.path != "" {
		r.URL.Path = rt.path
	}
	body, err := g.readBody(w, r)
	if err != nil {
		g.badBody(w, rt.api, grant, err)
		return
	}
	e := Entry{
		Person: grant.Person, Task: grant.Task, Session: grant.Session, Agent: grant.Agent,
		API: rt.api, Model: rt.model, Started: started, Own: grant.Own,
	}
	if e.Model == "" {
		e.Model = modelOf(body)
	}
	release, ok := g.reserve(w, rt.api, grant, askOf(rt.api, r.URL.Path, e.Model, body))
	if !ok {
		return
	}
	defer release() // after Record: the usage is in the ledger before its hold is gone
	g.forward(w, r, grant, body, rt, &e)
	e.Ended = time.Now()
	g.rec.Record(e)
}

// enter takes one of the grant's person's places in flight, answering
// the client when she has none left.
func (g *gateway) enter(w http.ResponseWriter, api API, grant Grant) bool {
	if g.flights.enter(grant.Person) {
		return true
	}
	g.log.Info("gateway: refused", "api", api, "status", http.StatusTooManyRequests, "person", grant.Person,
		"task", grant.Task, "reason", "requests in flight", "max", g.flights.max)
	writeRetryLater(w, api, fmt.Sprintf(msgInFlight, grant.Person, g.flights.max))
	return false
}

// authorize checks the request's credential and answers the client when
// it is refused. Behind the door even none goes to the Authorizer, which
// says (and audits) why it is refused.
func (g *gateway) authorize(w http.ResponseWriter, r *http.Request, api API) (Grant, bool) {
	token := g.credential(r, presented(api, r))
	if token == "" && !g.door {
		writeError(w, api, http.StatusUnauthorized, "", msgUnauthorized)
		return Grant{}, false
	}
	grant, err := g.auth.Authorize(r.Context(), api, token)
	return g.granted(w, r, api, grant, err)
}

// authorizeOwn checks the token a request signed in with its person's
// own subscription carries in its path.
func (g *gateway) authorizeOwn(w http.ResponseWriter, r *http.Request, rt route, token string) (Grant, bool) {
	api := rt.api
	oa, ok := g.auth.(OwnAuthorizer)
	token = g.credential(r, token)
	if !ok || (token == "" && !g.door) {
		writeError(w, api, http.StatusUnauthorized, "", msgUnauthorized)
		return Grant{}, false
	}
	grant, err := oa.AuthorizeOwn(r.Context(), api, rt.upstream, token)
	if err == nil && !grant.Own {
		err = errors.New("not a grant for the person's own subscription")
	}
	return g.granted(w, r, api, grant, err)
}

// credential is what r's grant is decided on: its connection's
// credential behind the door, else what it presents.
func (g *gateway) credential(r *http.Request, presented string) string {
	if g.door {
		return doorCredential(r)
	}
	return presented
}

// granted answers the client when err refuses the grant, or the grant
// cannot be used.
func (g *gateway) granted(w http.ResponseWriter, r *http.Request, api API, grant Grant, err error) (Grant, bool) {
	var no *Refusal
	switch {
	case errors.As(err, &no):
		g.log.Info("gateway: refused", "api", api, "status", no.Status, "reason", no.Message)
		writeError(w, api, no.Status, no.Type, no.Message)
		return Grant{}, false
	case err != nil:
		g.log.Info("gateway: token not accepted", "api", api, "remote", r.RemoteAddr, "err", err)
		writeError(w, api, http.StatusUnauthorized, "", msgUnauthorized)
		return Grant{}, false
	case grant.API != api || (grant.Key == "") != grant.Own || grant.Upstream == nil:
		g.log.Error("gateway: grant unusable", "api", api, "grant_api", grant.API, "person", grant.Person,
			"task", grant.Task, "has_key", grant.Key != "", "has_upstream", grant.Upstream != nil)
		writeError(w, api, http.StatusInternalServerError, "", msgMisgranted)
		return Grant{}, false
	}
	return grant, true
}

// readBody reads the request body whole, refusing one over maxBody
// before reading it when its length is declared.
func (g *gateway) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > g.maxBody {
		return nil, &http.MaxBytesError{Limit: g.maxBody}
	}
	return io.ReadAll(http.MaxBytesReader(w, r.Body, g.maxBody))
}

func (g *gateway) badBody(w http.ResponseWriter, api API, grant Grant, err error) {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		g.log.Info("gateway: request body too large", "api", api, "person", grant.Person, "task", grant.Task, "limit", tooLarge.Limit)
		writeError(w, api, http.StatusRequestEntityTooLarge, "", msgTooLarge)
		return
	}
	// The client went away or sent a broken body: nobody to answer.
	g.log.Info("gateway: request body unread", "api", api, "person", grant.Person, "err", err)
	writeError(w, api, http.StatusBadRequest, "", "agor gateway: request body unreadable")
}

// modelOf is the model a request body names, "" if none.
func modelOf(body []byte) string {
	var b struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &b)
	return b.Model
}
