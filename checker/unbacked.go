package checker

import (
	"fmt"

	"github.com/lockchaos/lockchaos/history"
)

// unbackedGrants makes a violation of each acquire granted with no reply on its client's parsed
// link backing it (history.Operation.Unbacked): every reply during the acquisition refused what
// its request asked, or none came before the grant. The client took an error, a refusal or a
// timeout for a grant and went on as the holder: a client-class violation whether or not
// another holder overlapped it.
func (r *run) unbackedGrants() []Violation {
	var vs []Violation
	for i := range r.ops {
		o := &r.ops[i]
		if o.Op != history.OpAcquire || !o.Ok() || o.Unbacked == "" {
			continue
		}
		vs = append(vs, Violation{Kind: "unbacked-grant", Class: ClientClass, AtMs: ms(o.Return), A: ref(o), B: ref(o),
			Explanation: fmt.Sprintf("client %d's acquisition (op %d) reported a grant at %s that no reply on its link backed: "+
				"the client took an error, a refusal or a timeout for a grant", o.Client, o.ID, history.FormatNs(o.Return)),
			Cause: fmt.Sprintf("client %d's acquisition (op %d) got no successful reply: %s", o.Client, o.ID, o.Unbacked)})
	}
	return vs
}
