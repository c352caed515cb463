//go:build race

package acceptance

// raceEnabled skips the fault matrix in .ci/run's race pass: it traces a
// separately built binary, so the race detector adds nothing to it but
// minutes (the injector's own tests run under -race).
const raceEnabled = true
