module github.com/tree-ring/tree-ring/projections/recall/recallbench

go 1.26.0

require github.com/tree-ring/tree-ring v0.0.0

require (
	github.com/oklog/ulid/v2 v2.1.2 // indirect
	golang.org/x/text v0.43.0 // indirect
)

replace github.com/tree-ring/tree-ring => ../../..
