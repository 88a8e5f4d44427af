// Package archtest holds no code: its test keeps the house's layout rules
// (which side of the wire each package is on, and what it may import), so
// a forbidden import fails `go test` rather than a review.
package archtest
