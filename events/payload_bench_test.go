package events

import (
	"encoding/json"
	"testing"
)

// BenchmarkDecodePayload is the strict payload decode of one event
// (DecodePayload: the value built, decoded by strictjson and checked), per
// type: the hook's payloads and a memory import's memory.captured.
func BenchmarkDecodePayload(b *testing.B) {
	rc, items := 3, int64(2)
	cases := []struct {
		typ, stream string
		p           any
	}{
		{TypeRunStarted, RunStream("01JD0000000000000000000001"), &RunStarted{RunID: "01JD0000000000000000000001", ScopeKey: "0123456789abcdef01234567",
			Command: RunCmdEventsImport, Harness: "codex", Stage: "start", PID: 4242, StartedAt: "2026-11-01T12:00:00.000Z"}},
		{TypeRunFinished, RunStream("01JD0000000000000000000001"), &RunFinished{RunID: "01JD0000000000000000000001", ScopeKey: "0123456789abcdef01234567",
			Status: "succeeded", Stage: "done", EndedAt: "2026-11-01T12:00:00.012Z", DurationMS: 12,
			Telemetry: &RunTelemetry{QueryClass: "startup_fallback", ResultCount: &rc, ReceiptID: "r-1", Items: &items}}},
		{TypePreflightSucceeded, HarnessStream("codex"), &PreflightSucceeded{Transition: Transition{From: "preflighting", To: "ready"}, HarnessID: "codex",
			WorkerKeyFingerprint: "sha256:0123456789abcdef", ReceiptID: "r-1", QueryClass: "startup", ResultCount: 3,
			SelectedMemoryIDsSHA256: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", DurationMS: 12}},
		{TypeReceiptRecorded, HarnessStream("codex"), &ReceiptRecorded{HarnessID: "codex", ReceiptID: "r-1", ProtocolVersion: 1,
			AdapterVersion: "1.0.0", BridgeFingerprint: "sha256:0123456789abcdef", StoreID: "01JD0000000000000000000002",
			ProjectRootFingerprint: "sha256:0123456789abcdef", WorkerKeyFingerprint: "sha256:0123456789abcdef", State: "ready",
			QueryClass: "startup", ResultCount: 3, SelectedMemoryIDsSHA256: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			DurationMS: 12, Status: "success", SHA256: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			RecordedAt: "2026-11-01T12:00:00Z", Session: &ReceiptSession{AgentProfile: "default", WorkflowID: "w-1", SessionID: "s-1"},
			Path: ".tree-ring/receipts/r-1.json"}},
		{TypeReceiptPruned, HarnessStream("codex"), &ReceiptPruned{HarnessID: "codex", WorkerKeyFingerprint: "sha256:0123456789abcdef", ReceiptID: "r-1", Reason: "retention"}},
		{TypeMemoryCaptured, MemoryStream("01JD0000000000000000000003"), &MemoryCaptured{MemoryID: "01JD0000000000000000000003",
			BodySHA256: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", CreatedAt: "2026-11-01T12:00:00Z",
			UpdatedAt: "2026-11-01T12:00:00Z", Project: "tree-ring", Scope: "project", Ring: "outer", EventType: "decision",
			SourceType: "import", Salience: 0.5, Confidence: 0.75, Sensitivity: "normal", Retention: "normal", Origin: "import"}},
	}
	for _, c := range cases {
		raw, err := json.Marshal(c.p)
		if err != nil {
			b.Fatal(err)
		}
		e := Envelope{Stream: c.stream, Type: c.typ, SchemaVersion: 1, Payload: raw}
		b.Run(c.typ, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DecodePayload(&e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
