package tencent

import (
	"github.com/loopguard/loopguard/core"
	"github.com/loopguard/loopguard/core/dialect"
)

// NewProvider returns TKE as a host holds it (core.Provider): the dialect, counting the
// allowlists declared in the options, and the driver in the mode the options choose (the
// driver is also a dialect.Remover and a dialect.Asker). opts may be nil: ModeServiceConfig,
// which writes annotations and TkeServiceConfig entries that TKE's controllers carry to the
// CLB and needs no cloud credentials. Invalid options are an error matching core.ErrInvalid.
func NewProvider(opts *DriverOptions) (core.Provider, error) {
	d, err := NewDriver(opts)
	if err != nil {
		return nil, err
	}
	return core.NewProvider(d.Dialect(), d), nil
}

var _ dialect.Asker = (*Driver)(nil)

// Ask is what to ask Tencent Cloud support for to be granted a capability (the package's Ask).
func (d *Driver) Ask(c core.Capability) string { return Ask(c) }
