package scenarios

// token+reentrant is token behind algorithms.Reentrant. The harness's clients acquire once per
// critical section, so in every catalogue scenario the wrapper runs at depth 1 and the lock is
// token: its column is token's, copied here so the two cannot drift apart.
//
// Re-entry itself is not a catalogue scenario yet: a scenario whose critical sections acquire the
// lock they hold again needs the harness to do that (a Workload knob, see the reentrancy test),
// and scenarios are data. Until then reentrant_test.go in algorithms (against a real redis-server)
// and reentrancy_test.go here (nested acquire and release inside every acquisition, checked by the
// whole pipeline through locktest) test it.
func init() {
	column := map[string]string{}
	for _, s := range All() {
		if code, ok := s.Expect["token"]; ok {
			column[s.Name] = code
		}
		if code, ok := extraExpect[s.Name]["token"]; ok {
			column[s.Name] = code
		}
	}
	Expect("token+reentrant", column)
}
