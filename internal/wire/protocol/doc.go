// Package protocol is the catalog of the wire between agor-daemon and
// agor-executor: every method name, every params and result type, the
// event vocabulary of report_message, and the application error codes
// with their reasons. Both ends import it and nothing else of each other;
// it imports only rpc.
//
// The catalog is documented in docs/protocol.md (checked against it by
// docs_test.go); its names and fields come from the system this replaces,
// so its clients can move over. The golden files under testdata are its
// executable form: one per message, checked in both directions (Go value
// → JSON, JSON → Go value).
//
// Params types implement rpc.Validator where a field can be checked
// without knowing the executor's state; the executor adds the checks
// that need it (paths beneath its root, environment variables it keeps).
package protocol
