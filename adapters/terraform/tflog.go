package terraform

import (
	"context"
	"fmt"
	"io"
	"log"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// LoggerOptions tune Logger.
type LoggerOptions struct {
	// Mask lists strings that must never reach a log line (credentials): every occurrence in a
	// message or a field value is replaced by tflog's mask. The drivers never log secrets; this
	// is the second lock on the same door.
	Mask []string
}

// Logger returns an hclog.Logger that writes through tflog with ctx, the context of the
// Terraform request being served, so loopguard's logs (the Reconciler's, the drivers') land in
// Terraform's log (TF_LOG, TF_LOG_PATH) with the request's fields, at the level Terraform was
// asked for. Use one per request; ctx must be the request's. opts may be nil.
//
// Names become the "@loopguard" field ("terraform.tencent"), hclog's implied arguments become
// fields, an error value becomes its message. The level filter is Terraform's: the logger
// itself passes everything on.
func Logger(ctx context.Context, opts *LoggerOptions) hclog.Logger {
	if opts != nil {
		var mask []string
		for _, m := range opts.Mask {
			if m != "" {
				mask = append(mask, m)
			}
		}
		if len(mask) > 0 {
			ctx = tflog.MaskAllFieldValuesStrings(ctx, mask...)
			ctx = tflog.MaskMessageStrings(ctx, mask...)
		}
	}
	return &tfLogger{ctx: ctx, level: hclog.Trace}
}

type tfLogger struct {
	ctx   context.Context
	name  string
	args  []any
	level hclog.Level
}

var _ hclog.Logger = (*tfLogger)(nil)

func (l *tfLogger) Log(level hclog.Level, msg string, args ...any) {
	if level < l.level || level == hclog.Off {
		return
	}
	fields := l.fields(args)
	switch level {
	case hclog.Trace:
		tflog.Trace(l.ctx, msg, fields)
	case hclog.Debug:
		tflog.Debug(l.ctx, msg, fields)
	case hclog.Warn:
		tflog.Warn(l.ctx, msg, fields)
	case hclog.Error:
		tflog.Error(l.ctx, msg, fields)
	default:
		tflog.Info(l.ctx, msg, fields)
	}
}

// fields turns hclog's key/value pairs into tflog's map. A lone last value is kept under
// hclog's own key for it, so nothing is dropped silently.
func (l *tfLogger) fields(args []any) map[string]any {
	all := append(append([]any(nil), l.args...), args...)
	m := make(map[string]any, len(all)/2+1)
	if l.name != "" {
		m["@loopguard"] = l.name
	}
	for i := 0; i < len(all); i += 2 {
		if i+1 == len(all) {
			m[hclog.MissingKey] = value(all[i])
			break
		}
		m[fmt.Sprint(all[i])] = value(all[i+1])
	}
	return m
}

// value makes a field JSON-friendly: tflog encodes fields as JSON, where an error would be {}.
func value(v any) any {
	switch x := v.(type) {
	case error:
		return x.Error()
	case fmt.Stringer:
		return x.String()
	case hclog.Format:
		return fmt.Sprintf(x[0].(string), x[1:]...)
	}
	return v
}

func (l *tfLogger) Trace(msg string, args ...any) { l.Log(hclog.Trace, msg, args...) }
func (l *tfLogger) Debug(msg string, args ...any) { l.Log(hclog.Debug, msg, args...) }
func (l *tfLogger) Info(msg string, args ...any)  { l.Log(hclog.Info, msg, args...) }
func (l *tfLogger) Warn(msg string, args ...any)  { l.Log(hclog.Warn, msg, args...) }
func (l *tfLogger) Error(msg string, args ...any) { l.Log(hclog.Error, msg, args...) }

func (l *tfLogger) IsTrace() bool { return l.level <= hclog.Trace }
func (l *tfLogger) IsDebug() bool { return l.level <= hclog.Debug }
func (l *tfLogger) IsInfo() bool  { return l.level <= hclog.Info }
func (l *tfLogger) IsWarn() bool  { return l.level <= hclog.Warn }
func (l *tfLogger) IsError() bool { return l.level <= hclog.Error }

func (l *tfLogger) ImpliedArgs() []any { return append([]any(nil), l.args...) }

func (l *tfLogger) With(args ...any) hclog.Logger {
	c := *l
	c.args = append(append([]any(nil), l.args...), args...)
	return &c
}

func (l *tfLogger) Name() string { return l.name }

func (l *tfLogger) Named(name string) hclog.Logger {
	c := *l
	if c.name == "" {
		c.name = name
	} else {
		c.name += "." + name
	}
	return &c
}

func (l *tfLogger) ResetNamed(name string) hclog.Logger {
	c := *l
	c.name = name
	return &c
}

func (l *tfLogger) SetLevel(level hclog.Level) { l.level = level }
func (l *tfLogger) GetLevel() hclog.Level      { return l.level }

// StandardLogger and StandardWriter let code that wants a *log.Logger or an io.Writer log
// through tflog too: each line is one Info record.
func (l *tfLogger) StandardLogger(*hclog.StandardLoggerOptions) *log.Logger {
	return log.New(l.StandardWriter(nil), "", 0)
}

func (l *tfLogger) StandardWriter(*hclog.StandardLoggerOptions) io.Writer { return lineWriter{l} }

type lineWriter struct{ l *tfLogger }

func (w lineWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if line != "" {
			w.l.Info(line)
		}
	}
	return len(p), nil
}
