module github.com/tree-ring/tree-ring

go 1.26

require (
	github.com/looplab/fsm v1.0.3
	github.com/oklog/ulid/v2 v2.1.2
	github.com/rs/zerolog v1.35.1
	github.com/spf13/pflag v1.1.0
	go.etcd.io/bbolt v1.5.0
)

require (
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	golang.org/x/sys v0.45.0 // indirect
)
