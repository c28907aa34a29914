package cloudprovider

import (
	"io"

	"github.com/go-logr/logr"
	"github.com/hashicorp/go-hclog"
)

// logrSink forwards the decorator's hclog lines to a logr.Logger, the interface klog/v2 and
// controller-runtime log through: a CCM fork passes klog.Background() and loopguard's lines sit
// beside the service controller's. hclog's own intercept logger does the fan-out; only the
// level mapping is ours: Error → Error, Warn and Info → V(0), Debug → V(4), Trace → V(5), as
// the Kubernetes logging conventions use V(4) for debug.
type logrSink struct{ l logr.Logger }

func (s logrSink) Accept(name string, level hclog.Level, msg string, args ...any) {
	l := s.l
	if name != "" {
		l = l.WithName(name)
	}
	switch {
	case level >= hclog.Error:
		l.Error(nil, msg, args...)
	case level >= hclog.Info:
		l.Info(msg, args...)
	case level == hclog.Debug:
		l.V(4).Info(msg, args...)
	default:
		l.V(5).Info(msg, args...)
	}
}

// hclogToLogr returns an hclog.Logger whose every line goes to l.
func hclogToLogr(l logr.Logger) hclog.Logger {
	il := hclog.NewInterceptLogger(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Trace})
	il.RegisterSink(logrSink{l: l})
	return il
}
