// Package process runs a lock written in any language as a child process that speaks JSON lines
// on stdin/stdout (docs/design.md#process-clients, docs/process-clients.md), behind algorithms.Locker.
package process

import (
	"encoding/json"
	"fmt"

	"github.com/lockchaos/lockchaos/algorithms"
)

// Message types and codes of the protocol. Their spelling is the contract with client authors.
const (
	TypeInit    = "init"
	TypeInitOk  = "init_ok"
	TypeAcquire = "acquire"
	TypeRelease = "release"
	TypeValid   = "valid"
	TypeOk      = "ok"
	TypeFail    = "fail"
	TypeInfo    = "info"
	TypeLost    = "lost"

	// fail codes: the operation definitely did not happen.
	CodeNotHeld         = "not_held"
	CodeTimeoutDefinite = "timeout_definite"
	CodeRefused         = "refused"
	// info codes: the operation may have happened.
	CodeTimeout        = "timeout"
	CodeConnectionLost = "connection_lost"
)

// request is one harness → client line.
type request struct {
	ID                int64    `json:"id"`
	Type              string   `json:"type"`
	Client            int      `json:"client,omitempty"`
	Lock              string   `json:"lock,omitempty"`
	TTLMs             int64    `json:"ttl_ms,omitempty"`
	Nodes             []string `json:"nodes,omitempty"`
	Topology          string   `json:"topology,omitempty"`
	SessionTimeoutMs  int64    `json:"session_timeout_ms,omitempty"`
	TimeoutMs         int64    `json:"timeout_ms,omitempty"`
	SentinelMaster    string   `json:"sentinel_master,omitempty"`
	SentinelAddresses []string `json:"sentinels,omitempty"`
	// Routes maps a server's address as the servers name it (Sentinel's answer for the master)
	// to this client's proxy for it: connect to the proxy instead.
	Routes map[string]string `json:"routes,omitempty"`
	// On the SQL topologies, how to log in besides the address (user, database,
	// application_name).
	*algorithms.SQLLogin `json:",omitempty"`
	// On kubernetes, the apiserver's bearer token and CA (PEM) besides its address, nodes[0]
	// (https): kube_token, kube_ca.
	*algorithms.KubeAccess `json:",omitempty"`
}

// reply is one client → harness line: an answer (in_reply_to set) or an unsolicited lost.
type reply struct {
	InReplyTo  *int64 `json:"in_reply_to"`
	Type       string `json:"type"`
	Code       string `json:"code"`
	Text       string `json:"text"`
	Name       string `json:"name"`
	Fence      uint64 `json:"fence"`
	ValidityMs *int64 `json:"validity_ms"`
	TTLMs      *int64 `json:"ttl_ms"`
	// NoExpiry: the server holds the lock until it is released or the holder's session ends
	// (a session lock), whatever the run's TTL (algorithms.Lease.NoExpiry).
	NoExpiry bool  `json:"no_expiry"`
	Held     *bool `json:"held"`
}

// parseReply decodes one line. Every problem is a protocol violation worth stopping the run for.
func parseReply(line []byte) (reply, error) {
	var r reply
	if err := json.Unmarshal(line, &r); err != nil {
		return r, fmt.Errorf("printed a line that is not a JSON object: %q", clip(string(line), 120))
	}
	switch r.Type {
	case TypeInitOk, TypeOk, TypeFail, TypeInfo:
		if r.InReplyTo == nil {
			return r, fmt.Errorf("sent %q without in_reply_to: %q", r.Type, clip(string(line), 120))
		}
	case TypeLost:
	default:
		return r, fmt.Errorf("sent an unknown message type %q (want init_ok, ok, fail, info or lost): %q", r.Type, clip(string(line), 120))
	}
	return r, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
