package activation

// Indeterminate is always true: part of a harness's files, or all of them
// with a failed sync, are on disk, so the command changed the project but
// not as planned (the command layer maps it to its exit code for unknown
// outcomes; the next init or activate reviews and completes it).
func (e *DurabilityFailure) Indeterminate() bool { return true }
