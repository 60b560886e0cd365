package enrich_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich"
)

// TestOrgProviderConfig: organizations' providers reach no loopback port
// unless the configuration names some.
func TestOrgProviderConfig(t *testing.T) {
	is := is.New(t)
	c, err := enrich.LoadConfig(nil)
	is.NoErr(err)
	is.Equal(len(c.OrgProviderAllowLoopbackPorts), 0)
	c, err = enrich.LoadConfig([]string{"ENRICH_ORG_PROVIDER_ALLOW_LOOPBACK_PORTS=8081,9000"})
	is.NoErr(err)
	is.Equal(c.OrgProviderAllowLoopbackPorts, []uint16{8081, 9000})
	_, err = enrich.LoadConfig([]string{"ENRICH_ORG_PROVIDER_ALLOW_LOOPBACK_PORTS=99999"})
	is.True(err != nil)
}
