package events

// ValidStoreID reports whether s is a store id as store.initialized
// carries it: a hyphenated lowercase version-4 UUID. Such an id is safe as a
// NATS subject token and a directory name (docs/fleet.md).
func ValidStoreID(s string) bool { return uuidV4(s) }
