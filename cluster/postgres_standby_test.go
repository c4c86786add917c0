package cluster

import (
	"errors"
	"strings"
	"testing"
)

func TestPostgresStandbySpec(t *testing.T) {
	if _, err := (Spec{Topology: PostgresStandby, Nodes: 3}).normalize(); !errors.Is(err, ErrBadSpec) {
		t.Errorf("postgres-standby with 3 nodes: %v, want ErrBadSpec", err)
	}
	if s, err := (Spec{Topology: PostgresStandby}).normalize(); err != nil || s.Nodes != 2 {
		t.Errorf("postgres-standby: nodes %d, %v; want 2", s.Nodes, err)
	}
	if _, err := (Spec{Topology: PostgresStandby, Backend: Docker}).normalize(); err != nil {
		t.Errorf("postgres-standby on docker: %v, want it taken (pg_basebackup at the standby's first start)", err)
	}
	if !CanKillSessions(PostgresStandby) {
		t.Errorf("CanKillSessions(postgres-standby) = false")
	}
	found := false
	for _, r := range Requirements(Local) {
		found = found || strings.HasSuffix(r.Name, "/pg_basebackup")
	}
	if !found {
		t.Errorf("Requirements(local) does not list pg_basebackup")
	}
}
