package enrich_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich"
)

// TestFetchConfig: the batch limit is unset until the service fills its
// default (TestDefaultsDeclaredOnce), and the loopback allowance is empty
// unless set.
func TestFetchConfig(t *testing.T) {
	is := is.New(t)
	c, err := enrich.LoadConfig(nil)
	is.NoErr(err)
	is.Equal(c.BatchMaxEntities, 0)
	is.Equal(len(c.FetchAllowLoopbackPorts), 0)
	c, err = enrich.LoadConfig([]string{"ENRICH_BATCH_MAX_ENTITIES=50", "ENRICH_FETCH_ALLOW_LOOPBACK_PORTS=8081,9000"})
	is.NoErr(err)
	is.Equal(c.BatchMaxEntities, 50)
	is.Equal(c.FetchAllowLoopbackPorts, []uint16{8081, 9000})
	_, err = enrich.LoadConfig([]string{"ENRICH_FETCH_ALLOW_LOOPBACK_PORTS=99999"})
	is.True(err != nil)
}
