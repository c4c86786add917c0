package checker

import "github.com/lockchaos/lockchaos/internal/histgen"

// The checker's tests generate their histories with internal/histgen.
type (
	genConfig = histgen.Config
	inject    = histgen.Inject
)

const (
	injectNone    = histgen.None
	injectClient  = histgen.Client
	injectService = histgen.Service
)

var generate = histgen.Generate
