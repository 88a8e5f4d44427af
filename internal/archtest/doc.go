// Package archtest holds no code: its tests keep the house's layout rules
// (which side of the wire each package is on, and what it may import) and
// its size budget (budget_test.go: lines per file and per function), so a
// breach fails `go test` rather than a review.
package archtest
