package tencent

import "github.com/loopguard/loopguard/core"

// Provider is TKE as a host holds it (core.Provider): the dialect, counting the allowlists
// declared in the options, and the driver, in the mode the options choose.
type Provider struct {
	driver *Driver
}

var _ core.Provider = (*Provider)(nil)

// NewProvider returns the Tencent provider. opts may be nil: ModeServiceConfig, which writes
// annotations and TkeServiceConfig entries that TKE's controllers carry to the CLB and needs
// no cloud credentials. Invalid options are an error matching core.ErrInvalid.
func NewProvider(opts *DriverOptions) (*Provider, error) {
	d, err := NewDriver(opts)
	if err != nil {
		return nil, err
	}
	return &Provider{driver: d}, nil
}

// Name is "tencent".
func (p *Provider) Name() string { return Name }

// Dialect reads TKE objects, with the declared allowlists counted as granted.
func (p *Provider) Dialect() core.Dialect { return p.driver.Dialect() }

// Driver returns the Tencent driver; TKE always has one.
func (p *Provider) Driver() (core.Driver, bool) { return p.driver, true }

var _ core.Asker = (*Driver)(nil)

// Ask is what to ask Tencent Cloud support for to be granted a capability (the package's Ask).
func (d *Driver) Ask(c core.Capability) string { return Ask(c) }
