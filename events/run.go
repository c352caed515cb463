package events

// RunStarted opens a run record.
type RunStarted struct {
	SchemaVersion int    `json:"schema_version"`
	RunID         string `json:"run_id"`
	ScopeKey      string `json:"scope_key"`
	Command       string `json:"command"`
	Stage         string `json:"stage"`
	PID           int    `json:"pid"`
	InputSHA256   string `json:"input_sha256,omitempty"`
	InputChars    int    `json:"input_chars"`
}

// RunFinished closes a run with a terminal outcome.
type RunFinished struct {
	RunID      string        `json:"run_id"`
	ScopeKey   string        `json:"scope_key"`
	Status     string        `json:"status"`
	Stage      string        `json:"stage"`
	DurationMS int64         `json:"duration_ms"`
	Diagnostic string        `json:"diagnostic,omitempty"`
	Telemetry  *RunTelemetry `json:"telemetry,omitempty"`
}

// RunTelemetry is bounded numeric and enumerated telemetry of a run.
type RunTelemetry struct {
	Harness     string `json:"harness,omitempty"`
	QueryClass  string `json:"query_class,omitempty"`
	ResultCount int    `json:"result_count"`
	ReceiptID   string `json:"receipt_id,omitempty"`
}

// RunInterrupted records that a run's process died without finishing.
type RunInterrupted struct {
	RunID    string `json:"run_id"`
	ScopeKey string `json:"scope_key"`
	PID      int    `json:"pid"`
	Detector int    `json:"detected_by_pid"`
}
