module github.com/agor-sh/agor

go 1.26.8

require (
	github.com/coreos/go-systemd/v22 v22.7.0 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
