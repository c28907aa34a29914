//go:build !unix

package manifest_test

import "time"

// processCPU is not measured here: the bounds apply to wall time instead.
func processCPU() (time.Duration, bool) { return 0, false }
