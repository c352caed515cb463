package events

// MemoryCaptured records a memory. The text is not here: BodySHA256 refers
// to the bodies bucket, so forget can delete it while the chain verifies.
type MemoryCaptured struct {
	MemoryID     string   `json:"memory_id"`
	BodySHA256   string   `json:"body_sha256"`
	EventType    string   `json:"event_type"`
	Ring         string   `json:"ring"`
	Scope        string   `json:"scope"`
	Sensitivity  string   `json:"sensitivity"`
	Project      string   `json:"project,omitempty"`
	AgentProfile string   `json:"agent_profile,omitempty"`
	WorkflowID   string   `json:"workflow_id,omitempty"`
	SessionID    string   `json:"session_id,omitempty"`
	OperationID  string   `json:"operation_id,omitempty"`
	SourceType   string   `json:"source_type,omitempty"`
	SourceRef    string   `json:"source_ref,omitempty"`
	Tags         []string `json:"tags,omitempty"`
	Salience     float64  `json:"salience"`
	Confidence   float64  `json:"confidence"`
	CreatedAt    string   `json:"created_at"`
	ExpiresAt    string   `json:"expires_at,omitempty"`
	Supersedes   string   `json:"supersedes,omitempty"`
	IdemDigest   string   `json:"idempotency_sha256,omitempty"`
}

// MemorySuperseded records that a memory was replaced by another.
type MemorySuperseded struct {
	MemoryID     string `json:"memory_id"`
	SupersededBy string `json:"superseded_by"`
}

// MemoryForgotten records a delete or redaction; the reason is stored as a
// digest and a length only.
type MemoryForgotten struct {
	MemoryID       string `json:"memory_id"`
	Mode           string `json:"mode"`
	ReasonSHA256   string `json:"reason_sha256"`
	ReasonChars    int    `json:"reason_chars"`
	RedactedSHA256 string `json:"redacted_body_sha256,omitempty"`
}
